"""The DTL509 op table (dtype_lint/facts/op_support.py) against the installed torch on CPU: each
entry's probe raises the recorded error for every dtype the entry lists, runs in float32, and
each listed Tensor method exists. An entry torch has since fixed fails here."""

import pytest
import torch  # the test extra installs it: a missing torch fails here, loudly

from dtype_lint.facts.op_support import UNSUPPORTED_OPS

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
CASES = [(op, dtype) for op in UNSUPPORTED_OPS for dtype in op.dtypes]


def _matrix(dtype):
    return (torch.eye(4) * 2 + 0.1).to(dtype)


def _resolve(qualified):
    target = torch
    for part in qualified.split(".")[1:]:
        target = getattr(target, part)
    return target


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{op.names[0]}-{dtype}" for op, dtype in CASES])
def test_entry_raises_in_low_precision(op, dtype):
    with pytest.raises((RuntimeError, NotImplementedError, TypeError)) as raised:
        eval(op.probe, {"torch": torch, "x": _matrix(DTYPES[dtype])})
    assert op.error in str(raised.value)


@pytest.mark.parametrize("op", UNSUPPORTED_OPS, ids=[op.names[0] for op in UNSUPPORTED_OPS])
def test_entry_probe_runs_in_float32_and_names_exist(op):
    eval(op.probe, {"torch": torch, "x": _matrix(torch.float32)})
    for name in op.names:
        assert callable(_resolve(name)), name
    for method in op.methods:
        assert callable(getattr(torch.Tensor, method)), method

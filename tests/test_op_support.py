"""DTL509's kernel gaps (dtype_lint/facts/op_support.py over the generated torch semantics)
against the installed torch on CPU: each op family the rule's docs name raises in float16 and
bfloat16 and runs in float32, and the data says so; ops torch 2.13 runs in low precision (CPU
Half ``sum``, bfloat16 ``nearest`` interpolation) are no gap and are not flagged."""

import pytest
import torch  # the test extra installs it: a missing torch fails here, loudly

from dtype_lint.config import Settings
from dtype_lint.facts import semantics
from dtype_lint.facts.op_support import gap, low_gaps
from dtype_lint.engine import check_text

DATA = semantics.load("2.13")
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}

# (data name, probe over a 4x4 matrix ``x``): the families the rule's docs list.
GAPS = [
    ("torch.fft.rfft2", "torch.fft.rfft2(x)"),
    ("torch.stft", "torch.stft(x.flatten(), 4, return_complex=True)"),
    ("torch.linalg.svd", "torch.linalg.svd(x)"),
    ("Tensor.svd", "x.svd()"),
    ("torch.linalg.eigh", "torch.linalg.eigh(x)"),
    ("torch.linalg.cholesky", "torch.linalg.cholesky(x)"),
    ("torch.linalg.qr", "torch.linalg.qr(x)"),
    ("torch.linalg.solve", "torch.linalg.solve(x, x)"),
    ("torch.linalg.inv", "torch.linalg.inv(x)"),
    ("torch.linalg.lstsq", "torch.linalg.lstsq(x, x)"),
    ("torch.quantile", "torch.quantile(x, 0.5)"),
    ("Tensor.quantile", "x.quantile(0.5)"),
    ("torch.polar", "torch.polar(x, x)"),
    ("torch.cdist", "torch.cdist(x, x)"),
    ("torch.histogram", "torch.histogram(x)"),
]
WORKS = [
    ("torch.sum", "torch.sum(x)"),
    ("Tensor.sum", "x.sum(dim=1)"),
    ("torch.nn.functional.interpolate", "torch.nn.functional.interpolate(x[None, None], scale_factor=2, mode='nearest')"),
    ("torch.matmul", "torch.matmul(x, x)"),
    ("torch.nn.functional.layer_norm", "torch.nn.functional.layer_norm(x, (4,))"),
]


def _matrix(dtype):
    return (torch.eye(4) * 2 + 0.1).to(dtype)


@pytest.mark.parametrize("op, probe", GAPS, ids=[op for op, _ in GAPS])
def test_gap_raises_live_and_is_in_the_data(op, probe):
    eval(probe, {"torch": torch, "x": _matrix(torch.float32)})  # float32 runs
    for code, dtype in DTYPES.items():
        with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
            eval(probe, {"torch": torch, "x": _matrix(dtype)})
        found = gap(DATA, op, code)
        assert found is not None and found.cpu, (op, code)
    assert {g.dtype for g in low_gaps(DATA, op)} == {"fp16", "bf16"}


@pytest.mark.parametrize("op, probe", WORKS, ids=[op for op, _ in WORKS])
def test_low_precision_that_runs_is_no_gap(op, probe):
    for code, dtype in DTYPES.items():
        eval(probe, {"torch": torch, "x": _matrix(dtype)})  # runs on 2.13's CPU
        found = gap(DATA, op, code)
        assert found is None or not found.cpu, (op, code)


def test_cusolver_gaps_are_everywhere_cuda_fft_half_is_not():
    assert gap(DATA, "torch.linalg.svd", "fp16").everywhere
    assert gap(DATA, "torch.linalg.inv", "bf16").everywhere
    assert gap(DATA, "torch.fft.rfft", "bf16").everywhere  # cuFFT has no bfloat16
    fp16_fft = gap(DATA, "torch.fft.rfft", "fp16")
    assert fp16_fft.cpu and fp16_fft.cuda is False  # cuFFT runs float16 ...
    assert fp16_fft.sizes and fp16_fft.everywhere  # ... for power-of-two sizes only


def _codes(source: str) -> list[tuple[str, int]]:
    report = check_text(source, "snippet.py", Settings())
    return [(f.code, f.line) for f in report.findings if f.code == "DTL509"]


def test_rule_flags_a_gap_and_not_what_runs():
    source = (
        "import torch\n"
        "x = torch.randn(8, 8, dtype=torch.float16)\n"
        "u, s, v = torch.linalg.svd(x)\n"
        "total = x.sum(dim=1)\n"
        "up = torch.nn.functional.interpolate(x[None, None], scale_factor=2, mode='nearest')\n"
        "q = x.quantile(0.5)\n"
    )
    assert _codes(source) == [("DTL509", 3), ("DTL509", 6)]


def test_cuda_claims_are_an_ampere_gpus():
    # op_db reads bfloat16 matmul support from the GPU it finds; the generator claims a recent one
    assert gap(DATA, "torch.matmul", "bf16") is None
    assert gap(DATA, "torch.bmm", "bf16") is None

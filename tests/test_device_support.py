"""Whether a program runs on Apple MPS, and whether a device expression may name it
(facts/device_support.py): evidence from the file's own code or its library, never a guess."""
import textwrap

import libcst as cst

from dtype_lint.context import FileContext
from dtype_lint.facts.device_support import may_be_mps, mps_evidence, under_device_test
from dtype_lint.facts.devices import scope_of
from dtype_lint.facts.training import keyword, walk


def _ctx(source: str) -> FileContext:
    source = textwrap.dedent(source)
    return FileContext("snippet.py", source, cst.parse_module(source))


def _factories(ctx):
    return [n for n in walk(ctx.module, into_definitions=True) if isinstance(n, cst.Call) and keyword(n, "device") is not None]


def test_a_diffusers_model_runs_on_mps_and_a_plain_module_does_not():
    diffusers = _ctx("""
        import torch
        from ..modeling_utils import ModelMixin
        class M(ModelMixin):
            pass
    """)
    assert mps_evidence(diffusers) is not None and "diffusers" in mps_evidence(diffusers).why
    plain = _ctx("""
        import torch
        from torch import nn
        class ModelMixin(nn.Module):
            pass
        class M(ModelMixin):
            pass
    """)
    assert mps_evidence(plain) is None  # a class of the same name, not diffusers'


def test_the_program_naming_mps_is_evidence():
    ctx = _ctx("""
        import torch
        ok = torch.backends.mps.is_available()
    """)
    assert mps_evidence(ctx) is not None
    assert mps_evidence(_ctx("import torch\ndevice = 'cuda'\n")) is None


def test_device_expressions():
    ctx = _ctx("""
        import torch
        def f(pos, device):
            cpu_table = 1.0 / (10000 ** (torch.arange(0, 8, 2, dtype=torch.float64, device="cpu") / 8))
            a = torch.zeros(3, device=pos.device)
            b = torch.zeros(3, device=cpu_table.device)
            c = torch.zeros(3, device="cuda")
            d = torch.zeros(3, device=device)
            if pos.device.type == "mps":
                e = torch.zeros(3, device=pos.device)
            return a, b, c, d, e
    """)
    calls = _factories(ctx)[1:]
    scope = scope_of(ctx, calls[0])
    assert [may_be_mps(ctx, keyword(c, "device"), scope) for c in calls] == [True, False, False, True, True]
    assert [under_device_test(ctx, c) for c in calls] == [False, False, False, False, True]

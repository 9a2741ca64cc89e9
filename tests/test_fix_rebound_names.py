"""A fix that rewrites a call through a local name is safe only when that name means one thing.

mmengine's AMP wrapper binds ``scaler_type = GradScaler`` (``torch.cuda.amp``) in one branch and
``scaler_type = ShardedGradScaler`` in another, then calls ``scaler_type(...)``: rewriting that
call to ``torch.amp.GradScaler("cuda", ...)`` would silently drop the sharded scaler. Wherever the
called name (or the head of a dotted callee) is bound to anything else in the file, the finding
stays and the fix is not offered; a name bound once, or bound twice to the same deprecated API,
keeps its fix.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from dtype_lint.config import Settings
from dtype_lint.engine import check_text
from dtype_lint.fixer import fix_text

# The project runs on torch >= 2.4: the replacements exist, the fixes are safe.
SETTINGS = Settings(target_torch="2.4")

# A name the file assigns a choice (issue 21): the call through it is no finding of its own; the
# assignment of the deprecated API is, once (or not at all where it is an old-torch fallback).
CHOSEN = {
    # mmengine's shape: the other branch binds an imported class of another library.
    "imported_elsewhere": """
        import torch
        from torch.cuda.amp import GradScaler
        from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

        def build(use_fsdp, loss_scale):
            if use_fsdp:
                scaler_type = ShardedGradScaler
            else:
                scaler_type = GradScaler
            return scaler_type(init_scale=loss_scale)  # CALL
        """,
    # the other binding is a class of this file, which the import table cannot resolve
    "local_class": """
        import torch
        from torch.cuda.amp import GradScaler as AmpScaler

        class NoScaler:
            def scale(self, loss):
                return loss

        make = AmpScaler
        if not torch.cuda.is_available():
            make = NoScaler
        scaler = make(enabled=True)  # CALL
        """,
}

REBOUND = {
    # the imported name itself is rebound later (a loop target)
    "import_rebound_by_loop": """
        import torch
        from torch.cuda.amp import autocast

        def run(model, x, contexts):
            with autocast(dtype=torch.float16):  # CALL
                y = model(x)
            for autocast in contexts:
                pass
            return y
        """,
    # the head of a dotted callee is rebound by a function parameter
    "dotted_head_rebound": """
        import torch
        from torch.cuda import amp

        def make_scaler(amp=amp):
            return amp.GradScaler()  # CALL
        """,
    # DTL210 (per-device autocast state) rewrites calls the same way
    "autocast_state_alias": """
        import torch

        get_dtype = torch.get_autocast_gpu_dtype
        if CPU_ONLY:
            get_dtype = lambda: torch.bfloat16
        dtype = get_dtype()  # CALL
        """,
}

UNAMBIGUOUS = {
    "alias_bound_once": """
        import torch
        from torch.cuda.amp import GradScaler

        scaler_type = GradScaler
        scaler = scaler_type(enabled=True)  # CALL
        """,
    "alias_bound_twice_to_the_same_api": """
        import torch
        from torch.cuda.amp import GradScaler

        if FP16:
            scaler_type = GradScaler
        else:
            scaler_type = GradScaler
        scaler = scaler_type(enabled=FP16)  # CALL
        """,
    "plain_import": """
        import torch
        from torch.cuda import amp

        scaler = amp.GradScaler()  # CALL
        """,
}


def _call_finding(source: str):
    text = textwrap.dedent(source)
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if row.endswith("# CALL"))
    report = check_text(text, "train.py", SETTINGS)
    assert not report.internal_errors, report.internal_errors
    at_call = [f for f in report.findings if f.line == line and f.code in ("DTL201", "DTL210")]
    assert len(at_call) == 1, [(f.line, f.code, f.message) for f in report.findings]
    return text, line, at_call[0]


@pytest.mark.parametrize("name", sorted(CHOSEN))
def test_a_call_through_a_name_assigned_a_choice_is_reported_at_the_assignment_once(name):
    text = textwrap.dedent(CHOSEN[name])
    rows = text.splitlines()
    call = next(n for n, row in enumerate(rows, start=1) if row.endswith("# CALL"))
    report = check_text(text, "train.py", SETTINGS)
    found = [(f.line, f.code) for f in report.findings if f.code == "DTL201"]
    assigned = [n for n, row in enumerate(rows, start=1) if re.search(r"= (GradScaler|AmpScaler)$", row)]
    assert found == [(assigned[0], "DTL201")] and call not in dict(found), found


MEGATRON = """
    import torch
    from functools import partial

    try:
        if is_torch_min_version("2.4.0a0"):
            custom_fwd = partial(torch.amp.custom_fwd, device_type="cuda")
        else:
            custom_fwd = torch.cuda.amp.custom_fwd
    except:
        custom_fwd = torch.cuda.amp.custom_fwd

    class LinearWithFrozenWeight(torch.autograd.Function):
        @staticmethod
        @custom_fwd
        def forward(ctx, input, weight):
            return input @ weight.t()
    """


def test_megatrons_version_gated_alias_with_a_bare_except_fallback_is_no_finding():
    """Megatron-LM layers.py (6 false findings on main): the alias is torch.amp's on torch >= 2.4;
    the old spelling only in the version test's else and in the bare ``except:``."""
    report = check_text(textwrap.dedent(MEGATRON), "layers.py", Settings())
    assert [f for f in report.findings if f.code == "DTL201"] == []


@pytest.mark.parametrize("name", sorted(REBOUND))
def test_a_call_through_a_rebound_name_is_reported_without_a_fix(name):
    text, line, finding = _call_finding(REBOUND[name])
    assert finding.fix is None, finding.fix
    outcome = fix_text(text, "train.py", SETTINGS, unsafe=True)
    assert outcome.failure is None, outcome.failure
    assert text.splitlines()[line - 1] in outcome.text.splitlines()


@pytest.mark.parametrize("name", sorted(UNAMBIGUOUS))
def test_a_call_through_a_name_that_means_one_api_keeps_its_fix(name):
    text, line, finding = _call_finding(UNAMBIGUOUS[name])
    assert finding.fix is not None
    outcome = fix_text(text, "train.py", SETTINGS)
    assert text.splitlines()[line - 1] not in outcome.text.splitlines()
    assert 'torch.amp.GradScaler("cuda"' in outcome.text

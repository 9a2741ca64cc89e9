"""The evidence a function's own code gives that its tensors may be float16/bfloat16
(dtype_lint/facts/flow/lowp_evidence.py): dtype tests and cast-backs seed the tested name, the
tests' branches narrow it, and only the rules that ask for it (DTL509) see it."""

import textwrap

from dtype_lint.config import Settings
from dtype_lint.engine import check_text
from test_flow import Probe


def value(probe: Probe, text: str, line: int):
    return probe.flow.value_of(probe.node(text, line), evidence=True)


def codes(source: str) -> list[tuple[str, int]]:
    report = check_text(textwrap.dedent(source), "snippet.py", Settings())
    assert not report.internal_errors
    return sorted((f.code, f.line) for f in report.findings)


def test_a_dtype_test_seeds_the_parameter_and_its_branches_narrow_it():
    p = Probe(
        """
        import torch
        def f(x):
            if x.dtype == torch.bfloat16:
                x = x.float()
            return torch.fft.fftn(x)
        """
    )
    entry = value(p, "x", 4)
    assert entry.dtypes == {"fp16", "bf16"} and entry.partial
    assert "the function is written for float16/bfloat16 tensors" in entry.since("fp16")
    after = value(p, "x", 6)
    assert after.dtypes == {"fp32", "fp16"} and after.partial  # bfloat16 was upcast, float16 was not
    # a rule that does not ask for the evidence sees what the flow knew before it
    assert p.flow.value_of(p.node("x", 6)).dtypes == {"fp32"}


def test_flag_alias_and_derived_values_follow_the_test():
    p = Probe(
        """
        import torch
        def f(w, dw, on_cpu):
            merged = w + dw
            orig = w.dtype
            upcast = on_cpu and orig in (torch.float16, torch.bfloat16)
            if upcast:
                w = w.float()
                merged = merged.float()
            return merged, w

        def g(w, dw):
            merged = w + dw
            upcast = w.dtype in (torch.float16, torch.bfloat16)
            if upcast:
                merged = merged.float()
            return merged
        """
    )
    # ``on_cpu and ...``: the else branch does not know the dtype, so the low dtypes stay
    assert value(p, "merged", 10).dtypes == {"fp32", "fp16", "bf16"}
    # a flag that is the test alone: where it is false, ``w`` and what came from it are not low
    assert value(p, "merged", 17).dtypes == {"fp32"}


def test_cast_back_to_a_remembered_dtype_is_evidence():
    p = Probe(
        """
        import torch
        def f(x):
            orig_dtype = x.dtype
            y = x * 2
            x = x.float()
            return (x + y).to(orig_dtype)
        """
    )
    assert value(p, "y", 7).dtypes == {"fp16", "bf16"}


def test_no_evidence_without_a_low_dtype_test_or_a_cast_back():
    p = Probe(
        """
        import torch
        def f(x, y):
            if x.dtype == torch.float32:
                x = x * 2
            orig = y.dtype
            y = y.float()
            return x, y
        """
    )
    assert value(p, "x", 8) is None or not value(p, "x", 8).dtypes & {"fp16", "bf16"}
    assert value(p, "y", 8).dtypes == {"fp32"}  # upcast without a cast back: no evidence


def test_an_assignment_in_a_sibling_branch_is_not_seeded():
    p = Probe(
        """
        import torch
        def f(x_in, odd):
            x = x_in
            if odd:
                x = x.to(dtype=torch.float32)
            elif x.dtype == torch.bfloat16:
                x = x.to(dtype=torch.float32)
            return x
        """
    )
    assert value(p, "x", 6).dtypes == {"fp32"}
    assert value(p, "x", 9).dtypes == {"fp32", "fp16"}


def test_only_dtl509_reports_on_evidence():
    found = codes(
        """
        import torch
        def f(x):
            if x.dtype == torch.float16:
                x = x.float()
            mask = torch.ones(x.shape)
            y = x * mask
            u, s, v = torch.linalg.svd(x)
            return u, y
        """
    )
    # the factory rule (DTL508) would call ``x * mask`` a bfloat16 promotion: it does not ask;
    # DTL509 reports at the guard that lets bfloat16 through to ``svd``
    assert found == [("DTL509", 4)]


def test_a_conditional_expression_narrows_its_sides():
    found = codes(
        """
        import torch
        def f(x):
            x = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
            return torch.linalg.svd(x)

        def g(x):
            x = x.float() if x.dtype == torch.float16 else x
            return torch.linalg.svd(x)
        """
    )
    assert found == [("DTL509", 9)]  # g leaves bfloat16 to reach svd


def test_an_assert_narrows_what_follows():
    found = codes(
        """
        import torch
        def f(x):
            if x.dtype == torch.float16:
                x = x.float()
            assert x.dtype == torch.float32
            return torch.linalg.svd(x)
        """
    )
    assert found == []


def test_the_evidence_stays_in_its_function():
    found = codes(
        """
        import torch
        def upcast_half(x):
            return x.float() if x.dtype == torch.float16 else x

        def caller(y):
            return torch.linalg.svd(upcast_half(y))

        def known_caller():
            return upcast_half(torch.randn(3, 3))
        """
    )
    assert found == []


def test_a_cast_back_to_an_evidenced_dtype_stays_evidence():
    # an RMSNorm: the weight follows the model's casts; only DTL509 may use the evidence
    found = codes(
        """
        import torch
        import torch.nn as nn
        class RMSNorm(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(n))

            def forward(self, hidden_states):
                input_dtype = hidden_states.dtype
                hidden_states = hidden_states.to(torch.float32)
                variance = hidden_states.pow(2).mean(-1, keepdim=True)
                hidden_states = hidden_states * torch.rsqrt(variance + 1e-6)
                return self.weight * hidden_states.to(input_dtype)
        """
    )
    assert found == []


def test_a_cast_back_spelled_with_the_input_dtype_is_evidence():
    # ``out.to(dtype=x_in.dtype)`` after an upcast of ``x_in`` (or of a plain copy of it) says what
    # ``orig = x_in.dtype; ...; out.to(orig)`` says: the function is written for low inputs.
    found = codes(
        """
        import torch
        def spectrum(x_in, odd):
            x = x_in
            if odd:
                x = x.to(dtype=torch.float32)
            return torch.fft.fftn(x).real.to(dtype=x_in.dtype)

        def solve(a, b):
            if a.shape[0] > 4:
                a = a.float()
            return torch.linalg.solve(a, b).type(a.dtype)
        """
    )
    assert ("DTL509", 7) in found
    # ``a`` cast back to its own (upcast) dtype: no statement about the input
    assert not [line for code, line in found if line > 8]


def test_a_cast_back_without_an_upcast_is_no_evidence():
    found = codes(
        """
        import torch
        def spectrum(x_in):
            x = x_in * 2
            return torch.fft.fftn(x).real.to(dtype=x_in.dtype)

        def spectrum_float(x_in):
            x = x_in.float()
            return torch.fft.fftn(x).real.to(dtype=x_in.dtype)
        """
    )
    assert found == []


def test_dtl509_reports_at_the_upcast_guard_a_low_dtype_slips_past():
    found = codes(
        """
        import torch
        def spectrum(x):
            if x.dtype == torch.bfloat16:
                x = x.float()
            return torch.fft.rfft(x)

        def whiten(q, eye):
            cast = q.device.type == "cpu" and q.dtype in (torch.float16, torch.bfloat16)
            if cast:
                q = q.float()
            return torch.linalg.solve(eye - q, eye + q)

        def whole(x):
            if x.dtype in (torch.float16, torch.bfloat16):
                x = x.float()
            return torch.fft.rfft(x)
        """
    )
    # float16 passes the bfloat16-only test; on CUDA the CPU-only upcast lets both through;
    # a guard that upcasts every low dtype is silent
    assert found == [("DTL509", 4), ("DTL509", 10)]


def test_an_upcast_of_another_tensor_keeps_the_finding_at_the_op():
    found = codes(
        """
        import torch
        def merge(w, dw):
            merged = w + dw
            if w.dtype in (torch.float16, torch.bfloat16):
                w = w.float()
            return torch.linalg.svd(merged)
        """
    )
    assert found == [("DTL509", 7)]

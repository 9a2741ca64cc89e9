"""A tensor whose dtype the function follows (facts/flow/lowp_evidence.py ``follows``,
facts/followed.py): a function that makes or casts a tensor in ``x``'s dtype is written for the
dtypes its callers give ``x``, float16/bfloat16 among them. A float32 the same function fixes (a
factory without ``dtype=``, a ``.float()``) that meets ``x`` is reported with that condition:
DTL510 for arithmetic (promotion), DTL107 for matmul/linear/conv (torch raises)."""

import textwrap

from dtype_lint.config import Settings
from dtype_lint.engine import check_text
from test_flow import Probe


def findings(source: str) -> list:
    report = check_text(textwrap.dedent(source), "snippet.py", Settings())
    assert not report.internal_errors
    return sorted(report.findings, key=lambda f: (f.line, f.code))


def codes(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in findings(source)]


def test_a_followed_dtype_seeds_the_tensor_for_the_rules_that_ask():
    p = Probe(
        """
        import torch
        def step(model_output, sample):
            prev = sample * 0.5 + model_output
            return prev.to(sample.dtype)
        """
    )
    node = p.node("sample", 4)
    value = p.flow.value_of(node, follows=True)
    assert value.dtypes == {"fp16", "bf16"} and value.partial
    assert "the function follows the dtype its callers give `sample`" in value.since("fp16")
    # neither the plain flow nor the dtype-test evidence (DTL509's) sees it
    assert not p.flow.value_of(node).dtypes
    assert not p.flow.value_of(node, evidence=True).dtypes


def test_a_known_dtype_is_not_widened_by_a_followed_one():
    p = Probe(
        """
        import torch
        def scale(x):
            y = x.float()
            return torch.ones(3, dtype=y.dtype)
        """
    )
    assert p.flow.value_of(p.node("y", 5), follows=True).dtypes == {"fp32"}


def test_noise_without_dtype_added_to_a_followed_sample_is_dtl510():
    source = """
        import torch
        def step(model_output, sample, generator=None):
            prev = sample * 0.5 + model_output
            noise = torch.randn(model_output.shape, generator=generator)
            prev = prev + 0.3 * noise
            ref = torch.zeros(3, dtype=sample.dtype)
            return prev, ref
        """
    found = findings(source)
    assert [(f.code, f.line) for f in found] == [("DTL510", 5)]
    assert "when `sample` is float16/bfloat16" in found[0].message
    assert "the function follows its dtype: line 7" in found[0].message


def test_a_gain_without_dtype_multiplied_into_a_followed_tensor_is_dtl510():
    source = """
        import torch
        def modulate(h, mask):
            gain = torch.ones(h.shape[-1], device=h.device)
            out = h * gain
            return out, mask.to(h.dtype)
        """
    assert codes(source) == [("DTL510", 4)]


def test_followed_twins_stay_silent():
    # the factory takes the dtype it follows
    assert codes("""
        import torch
        def step(sample):
            noise = torch.randn(sample.shape, dtype=sample.dtype)
            return sample + noise, torch.zeros(1, dtype=sample.dtype)
        """) == []
    # the combined result is cast back: the float32 is a chosen intermediate
    assert codes("""
        import torch
        def step(sample):
            noise = torch.randn(sample.shape)
            out = sample + noise
            return out.to(sample.dtype)
        """) == []
    # nothing in the function follows the dtype: a caller may pass float32 only
    assert codes("""
        import torch
        def step(sample):
            noise = torch.randn(sample.shape)
            return sample + noise
        """) == []
    # a NumPy dtype followed says nothing of a tensor
    assert codes("""
        import numpy as np
        import torch
        def step(sample):
            out = sample + torch.randn(4)
            return out, np.zeros(3, dtype=sample.dtype)
        """) == []
    # every caller in the program passes float32
    assert codes("""
        import torch
        def step(sample):
            out = sample + torch.randn(4)
            return out, torch.zeros(3, dtype=sample.dtype)
        step(torch.randn(4))
        """) == []


def test_a_float32_matrix_against_a_followed_input_is_dtl107():
    source = """
        import torch
        import torch.nn.functional as F
        def rotate(x, n):
            previous_dtype = x.dtype
            rotation = torch.eye(n, device=x.device)
            out = F.linear(x, rotation)
            return out.to(previous_dtype)
        """
    found = findings(source)
    assert [(f.code, f.line) for f in found] == [("DTL107", 7)]
    assert "when `x` is float16/bfloat16" in found[0].message and "F.linear" in found[0].message


def test_an_upcast_not_cast_back_before_a_matmul_is_dtl107():
    source = """
        import torch
        def quadratic(key, query, value):
            scores = torch.matmul(key.transpose(-1, -2), query)
            scores = scores.to(dtype=torch.float32)
            hidden = torch.matmul(value, scores)
            return hidden.to(value.dtype)
        """
    assert codes(source) == [("DTL107", 6)]


def test_matmul_twins_stay_silent():
    assert codes("""
        import torch
        import torch.nn.functional as F
        def rotate(x, n):
            rotation = torch.eye(n, device=x.device, dtype=x.dtype)
            return F.linear(x, rotation).to(x.dtype)
        """) == []
    assert codes("""
        import torch
        def quadratic(key, query, value):
            scores = torch.matmul(key.transpose(-1, -2), query).to(torch.float32)
            hidden = torch.matmul(value.float(), scores)
            return hidden.to(value.dtype)
        """) == []
    # under autocast both operands are cast to its dtype
    assert codes("""
        import torch
        import torch.nn.functional as F
        def rotate(x, n):
            rotation = torch.eye(n, device=x.device)
            with torch.autocast("cuda"):
                out = F.linear(x, rotation)
            return out.to(x.dtype)
        """) == []


def test_a_promoted_product_stored_in_place_stays_silent():
    # ``acc += h * w`` and ``acc[i] = h * w`` write into ``acc``'s dtype: the float32 is transient
    assert codes("""
        import torch
        def accumulate(h):
            acc = torch.zeros_like(h)
            count = torch.zeros((1, h.shape[1], 1), device=h.device)
            weights = torch.ones_like(count)
            acc += h * weights
            acc[:, :1] = h[:, :1] * weights[:, :1]
            return acc, torch.ones(1, dtype=h.dtype)
        """) == []


def test_a_followed_config_or_model_dtype_is_no_tensor_evidence():
    # ``config.dtype`` is followed, but ``config`` is no tensor: it stays what the flow knows
    p = Probe(
        """
        import torch
        def build(config, n):
            if config.dtype == "auto":
                pass
            return torch.zeros(n, dtype=config.dtype)
        """
    )
    value = p.flow.value_of(p.node("config", 4), follows=True)
    assert value is None or value.kind != "tensor"
    assert codes("""
        import torch
        def build(config, n):
            if config.dtype == "auto":
                pass
            return torch.zeros(n, dtype=config.dtype)
        """) == []


def test_a_module_parameter_or_a_callers_evidence_is_not_fixed_here():
    # the weight is built in __init__ (module casts move it); the dtype is followed by the caller
    assert codes("""
        import torch
        from torch import nn
        class PerCategory(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.W = nn.Parameter(torch.randn(n, d, d))
            def forward(self, x, ids):
                w = self.W[ids]
                return torch.bmm(x, w)
        def run(layer, h, ids):
            noise = torch.randn(h.shape, dtype=h.dtype)
            return layer(h + noise, ids)
        """) == []


def test_a_local_bound_to_a_followed_attribute_chain_carries_the_followed_dtype():
    p = Probe(
        """
        import torch
        def forward(self, x):
            x = x.to(self.get_base_layer().weight.dtype)
            w = self.get_base_layer().weight.data
            return x @ w
        """
    )
    value = p.flow.value_of(p.node("w", 6), follows=True)
    assert value.dtypes == {"fp16", "bf16"} and value.partial
    assert not p.flow.value_of(p.node("w", 6)).dtypes  # only the rules that state the condition see it


def test_a_chain_that_is_not_followed_stays_unknown():
    p = Probe(
        """
        import torch
        def forward(self, x):
            x = x.to(self.base.weight.dtype)
            w = self.other.weight.data
            return x @ w
        """
    )
    value = p.flow.value_of(p.node("w", 6), follows=True)
    assert value is None or not value.dtypes


def test_a_loop_carried_factory_against_a_followed_base_weight_is_dtl107_at_the_factory():
    source = """
        import torch
        def forward(self, x):
            rot = torch.eye(self.n, device=x.device)
            for name in self.active:
                rot = torch.block_diag(*self.blocks[name]) @ rot
            x = x.to(self.base_layer.weight.dtype)
            w = self.base_layer.weight
            return torch.mm(x, torch.mm(rot, w))
        """
    assert codes(source) == [("DTL107", 4)]


def test_an_uncast_sibling_of_a_cast_owner_tensor_is_dtl510():
    found = findings("""
        import torch
        def normalize(self, z):
            mean = self.bn.stats.mean.to(z.dtype)
            return (z - mean) / self.bn.stats.std
        """)
    assert [(f.code, f.line) for f in found] == [("DTL510", 5)]
    assert "casts another tensor of `self.bn.stats`" in found[0].message
    assert codes("""
        import torch
        def normalize(self, z):
            mean = self.bn.stats.mean.to(z.dtype)
            return (z - mean) / self.bn.stats.std.to(z.dtype)
        """) == []


def test_a_wrapper_parameter_made_without_dtype_is_dtl510_at_the_factory():
    source = """
        import torch
        from torch import nn
        class Gate(nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner
                self.gate = nn.Parameter(torch.zeros(inner.weight.shape[0]))
            def forward(self, x):
                return x + self.gate * self.inner(x).to(x.dtype)
        """
    assert codes(source) == [("DTL510", 8)]
    # a module that builds its own layers is cast as a whole: silent
    assert codes(source.replace("self.inner = inner", "self.inner = nn.Linear(4, 4)")
                 .replace("inner.weight.shape[0]", "4").replace("__init__(self, inner)", "__init__(self)")) == []

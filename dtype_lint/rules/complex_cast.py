"""DTL512 complex-to-real-cast: a complex tensor cast to a real dtype (its imaginary part dropped)."""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.complex_values import REAL_CASTS, complex_value
from dtype_lint.facts.flow.op_results import data_for
from dtype_lint.findings import Confidence
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule

_REAL = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}


class ComplexToRealCast(Rule):
    """## What it does
    Flags a cast to a real floating dtype (`.float()`, `.half()`, `.double()`, `.bfloat16()`,
    `.to(torch.float32)`) of a tensor that is complex: the result of an op that torch's
    generated semantics records as returning a complex tensor (`torch.polar`, `torch.complex`,
    `torch.view_as_complex`, the forward `torch.fft` transforms, `stft(return_complex=True)`,
    `torch.linalg.eigvals`), called in place or bound once to a local name before the cast.
    The inverse FFTs (`torch.fft.ifft`...) are left out: the real part of the inverse transform of
    a real signal's spectrum is the usual intent.

    ## Why is this bad?
    A complex-to-real cast keeps the real part and drops the imaginary one; torch only warns
    (`UserWarning: Casting complex values to real discards the imaginary part`). Rotary
    embeddings built with `torch.polar(torch.ones_like(freqs), freqs).float()` keep
    `cos(freqs)` and lose `sin(freqs)`: the rotation the attention applies is wrong and nothing
    raises (huggingface/diffusers 4f495b0, where the author meant "complex64" in the comment).

    ## Example
    ```python
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs).float()  # complex64
    ```

    ## Use instead
    ```python
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64
    # or, when real tensors are needed: torch.view_as_real(freqs_cis), freqs_cis.real, .imag
    ```

    ## Fix safety
    No fix: whether the complex tensor is meant (drop the cast), both parts as real
    (`torch.view_as_real`) or one part (`.real`, `.abs()`) is the author's choice.
    """

    code = "DTL512"
    name = "complex-to-real-cast"
    summary = "Complex tensor (torch.polar, view_as_complex, fft) cast to a real dtype: the imaginary part is dropped"
    queries = (
        "torch's semantics data: which ops return a complex tensor for float inputs (facts/semantics.py, read by facts/flow/op_results.py)",
        "a call of such an op, or a local name bound to one before the cast (facts/complex_values.py)",
    )
    triggers = tuple(exact_word(word) for word in ("polar", "complex", "view_as_complex", "fft", "fft2", "fftn", "rfft",
                                                   "rfft2", "rfftn", "stft", "eigvals", "cfloat", "cdouble", "chalf"))
    valid = (
        "import torch\nfreqs = torch.outer(t, f)\nfreqs_cis = torch.polar(torch.ones_like(freqs), freqs)\n",
        "import torch\nz = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))\n"
        "out = torch.view_as_real(z * f).flatten(3)\n",
        # the real part of an inverse transform: its imaginary part is rounding noise
        "import torch\nsignal = torch.fft.ifft(spectrum).float()\n",
        "import torch\ndef power(x):\n    spec = torch.fft.rfft(x)\n    return spec.abs().float()\n",
    )
    invalid = (
        Invalid("import torch\nfreqs_cis = torch.polar(torch.ones_like(freqs), freqs).float()\n"),
        Invalid(
            "import torch\ndef spectrum(x):\n    spec = torch.fft.rfft(x.float(), dim=-1)\n"
            "    return spec.to(torch.float16)\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Attribute):
            return
        target = self._real_dtype(node)
        if target is None:
            return
        data = data_for(self.ctx)
        found = complex_value(self.ctx, data, node.func.value)
        if found is None:
            return
        op, call = found
        receiver = self.ctx.code_for(node.func.value).strip()
        where = "" if call is node.func.value else f" at line {self.ctx.position(call).start.line}"
        out = data.entry(op).get("out")
        kind = out[1:] if isinstance(out, str) else "complex"
        self.report(
            node,
            f"`{receiver}` is a {kind} tensor (from `{op.replace('Tensor.', '.')}`{where}), and the cast to {target} keeps its"
            " real part only (torch warns: \"Casting complex values to real discards the imaginary part\"); keep it"
            " complex, or take both parts with `torch.view_as_real(...)` (`.real`/`.imag` for one)",
            confidence=Confidence.HIGH if call is node.func.value else Confidence.MEDIUM,
        )

    def _real_dtype(self, node: cst.Call) -> str | None:
        method = node.func.attr.value
        if method in REAL_CASTS:
            return REAL_CASTS[method] if not node.args else None
        if method not in ("to", "type"):
            return None
        dtype = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "dtype"), None)
        if dtype is None:
            plain = [a.value for a in node.args if a.keyword is None and not a.star]
            dtype = next((p for p in plain if self._dtype_of(p) is not None), None)
        names = self._dtype_of(dtype) if dtype is not None else None
        if not names:
            return None
        return " or ".join(_REAL[d] for d in sorted(names))

    def _dtype_of(self, node: cst.BaseExpression) -> frozenset | None:
        """The real float dtypes ``node`` certainly names (``torch.float32``, a name bound to it)."""
        value = self.ctx.flow.value_of(node)
        if value is None or value.kind != "dtype" or not value.dtypes or not value.certain:
            return None
        if not value.dtypes <= frozenset(_REAL):
            return None
        return frozenset(value.dtypes)

"""Ops that low precision does not support: DTL509 lowp-unsupported-op (the gaps come from
torch's generated semantics, through dtype_lint/facts/op_support.py)."""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.flow.library import LOWP_TRIGGERS
from dtype_lint.facts.flow.lowp_evidence import ContractOrigin
from dtype_lint.facts.followed import condition
from dtype_lint.facts.flow.op_results import data_for
from dtype_lint.facts.numerics import BF16, FP16, autocast_enabled_at, call_shape, explain, is_simple_reference
from dtype_lint.facts.op_support import Gap, low_gaps
from dtype_lint.facts.upcast_guard import guard_before
from dtype_lint.prefilter import exact_word
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.rules.base import Invalid, Rule

LONG = {FP16: "float16", BF16: "bfloat16"}


class LowpUnsupportedOp(Rule):
    """## What it does
    Flags an op that has no float16/bfloat16 kernel applied to a tensor the dtype flow knows
    may be float16 or bfloat16: `torch.fft.*` and `stft`, the `torch.linalg` factorizations
    and solvers (`svd`, `eigh`, `cholesky`, `qr`, `solve`, `inv`, `det`, `lstsq`, `pinv`...),
    `quantile`, `polar`, `complex`/`view_as_complex` on bfloat16, and the CPU-only gaps
    (`cdist`, `pdist`, `ctc_loss`, `histogram`). A model's `forward` run under float16 autocast
    by another function or file (`with torch.autocast(...): model(x)`, Lightning's
    `precision="16-mixed"`, accelerate's `mixed_precision="fp16"`) is checked under that region
    by the whole-program pass: an FFT of a conv or linear output there is float16. A function
    whose own code shows it runs on float16/bfloat16 tensors is checked on the paths that leave
    them in low precision, even when they arrive through parameters: a dtype test that upcasts
    only some dtypes (`elif x.dtype == torch.bfloat16: x = x.float()` before `fftn`, so float16
    reaches it), an upcast guarded by another condition (`if on_cpu and orig_dtype in
    (torch.float16, torch.bfloat16):` before `linalg.solve`), an upcast of one tensor while the op
    runs on another computed from it before (`svd(W + dW)` after `W = W.float()`), or a remembered
    dtype cast back at the end (`orig = x.dtype; x = x.float(); ...; out.to(orig)`) with a value
    computed before the upcast, also spelled `out.to(dtype=x_in.dtype)` after upcasting a copy
    of `x_in` (docs/analysis.md, "What a function says of its own inputs"). A library's contract
    counts too (facts/lowp_contract.py): a diffusers scheduler's `step` gets the pipeline's
    float16/bfloat16 latents, so `torch.quantile` of its predicted sample (dynamic thresholding),
    there or in a helper `step` calls, raises on that path. Where such an upcast
    guard lets a low dtype through, the finding is at the guard's test, naming the op. Which op lacks
    which kernel is read from torch's generated semantics for the configured `target-torch`
    (docs/torch-semantics.md; the query: `kernel_missing(op, dtype, device)`): on CPU, a dtype
    torch's op database does not claim and whose run raised; on CUDA, one the database does not
    claim. An op torch has since given a kernel (CPU Half `sum`, bfloat16 `nearest`
    interpolation on 2.13) is not flagged.

    ## Why is this bad?
    The call raises at run time (`"linalg_svd_cpu" not implemented for 'Half'`,
    `Unsupported dtype Half`, `quantile() input tensor must be either float or double dtype`),
    usually deep into a run: the first time an fp16 model reaches a spectral loss, an
    orthogonal init, a whitening step or an evaluation metric (pytorch/pytorch#70664,
    pytorch/pytorch#98308, NVIDIA/apex#887). cuSOLVER and MAGMA have no half-precision
    factorizations, so the linear-algebra entries raise on CUDA as well; cuFFT takes float16
    only for power-of-two sizes and bfloat16 not at all. Autocast does not help: it does not
    upcast these ops' inputs (except `cdist`/`pdist` on CUDA).

    ## Example
    ```python
    features = encoder(images.half())          # float16 model
    u, s, v = torch.linalg.svd(features)
    ```

    ## Use instead
    ```python
    u, s, v = torch.linalg.svd(features.float())
    ```

    ## Fix safety
    Unsafe: it appends `.float()` to the op's input, so the result is float32 where the code
    may expect the input's dtype (cast it back with `.to(x.dtype)` if needed). Confidence is
    high when the tensor is low precision on every path and the op raises on every device,
    medium when only the CPU kernel is missing, a path leaves the dtype unknown, or a union
    holds the low dtype (a flag's branch: a reachable configuration raises); low for a union
    reaching an op whose CUDA kernel exists.
    """

    code = "DTL509"
    name = "lowp-unsupported-op"
    summary = "Op with no float16/bfloat16 kernel (fft, linalg svd/solve/inv, quantile...) on a low-precision tensor"
    queries = (
        "which ops have no float16/bfloat16 kernel on CPU or CUDA for the target torch, from torch's generated semantics (facts/op_support.py, facts/semantics.py)",
        "the dtype flow: the dtypes the op's tensor may have, with what the function's own code says about its precision (facts/dtypes.py, computed by facts/flow/interpreter.py; facts/flow/lowp_evidence.py)",
        "an upcast guard the low dtype slipped past (facts/upcast_guard.py)",
        "the enabled autocast region around a node, as the dtype flow records it (facts/dtypes.py `autocast_at`)",
    )
    fix_safety = Safety.UNSAFE
    # needs a float16/bfloat16 value (see facts/flow/library.py), a function's own evidence of
    # one, which reads a tensor's ``.dtype`` (``out.to(x.dtype)``, ``x.dtype != torch.float32``),
    # or a library contract's (a diffusers scheduler: facts/lowp_contract.py)
    triggers = LOWP_TRIGGERS + (exact_word("dtype"), exact_word("SchedulerMixin"))
    valid = (
        "import torch\nx = torch.randn(8, 8, dtype=torch.float16)\nu, s, v = torch.linalg.svd(x.float())\n",
        "import torch\nx = torch.randn(8, 8).half()\nspectrum = torch.fft.rfft(x.float())\n",
        # complex float16 exists; only bfloat16 has no complex type
        "import torch\nx = torch.randn(4, 2, dtype=torch.float16)\nz = torch.view_as_complex(x)\n",
        # every dtype but float32 is upcast before the FFT
        "import torch\ndef spectrum(x):\n    if x.dtype != torch.float32:\n        x = x.float()\n"
        "    return torch.fft.fftn(x)\n",
    )
    invalid = (
        Invalid(
            "import torch\nx = torch.randn(8, 8, dtype=torch.float16)\nu, s, v = torch.linalg.svd(x)\n",
            fixed="import torch\nx = torch.randn(8, 8, dtype=torch.float16)\nu, s, v = torch.linalg.svd(x.float())\n",
        ),
        Invalid(
            "import torch\nx = torch.randn(8, 64).bfloat16()\nspectrum = torch.fft.rfft(x, dim=-1)\n",
            fixed="import torch\nx = torch.randn(8, 64).bfloat16()\nspectrum = torch.fft.rfft(x.float(), dim=-1)\n",
        ),
        Invalid(
            "import torch\nscores = torch.rand(100).half()\nthreshold = scores.quantile(0.9)\n",
            fixed="import torch\nscores = torch.rand(100).half()\nthreshold = scores.float().quantile(0.9)\n",
        ),
        # the function's own test shows low-precision inputs; only bfloat16 is upcast
        Invalid(
            "import torch\ndef spectrum(x):\n    if x.dtype == torch.bfloat16:\n        x = x.float()\n"
            "    return torch.fft.fftn(x)\n",
            fixed="import torch\ndef spectrum(x):\n    if x.dtype == torch.bfloat16:\n        x = x.float()\n"
            "    return torch.fft.fftn(x.float())\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        shape = call_shape(self.ctx, node)
        if shape is None:
            return
        if shape.qualified is not None:
            if not shape.qualified.startswith("torch."):
                return
            name = shape.qualified
            positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
            tensor = positional[0].value if positional else None
            spelled = shape.qualified
        else:
            name = f"Tensor.{shape.name}"
            tensor = shape.receiver
            spelled = f".{shape.name}()"
        if tensor is None:
            return
        data = data_for(self.ctx)
        gaps = low_gaps(data, name) if data is not None else ()
        if gaps:
            self._check(node, name, gaps, tensor, spelled)

    def _check(self, node: cst.Call, name: str, gaps: tuple[Gap, ...], tensor: cst.BaseExpression, spelled: str) -> None:
        value = self.ctx.flow.value_of(tensor, evidence=True)
        if value is None or value.kind != "tensor":
            return
        hit = [gap for gap in gaps if value.may_be(gap.dtype)]
        if not hit:
            self._check_contract(node, gaps, tensor, spelled)
            return
        gap = next((g for g in hit if g.everywhere), hit[0])
        if autocast_enabled_at(self.ctx, node):
            data = data_for(self.ctx)
            if not gap.everywhere or data.autocast_policy(name) == "fp32":
                return  # CUDA autocast runs cdist/pdist in float32; the rest is device-dependent
        dtypes = frozenset(g.dtype for g in hit)
        if value.only(*dtypes):
            confidence = Confidence.HIGH if gap.everywhere else Confidence.MEDIUM
        elif value.dtypes <= dtypes:
            confidence = Confidence.MEDIUM  # low precision wherever known
        elif gap.everywhere:
            # A union that holds the low dtype (``model.to(torch.bfloat16 if args.bf16 else
            # torch.float32)``): a reachable configuration raises, on every device.
            confidence = Confidence.MEDIUM
        else:
            confidence = Confidence.LOW
        message = (
            f"`{spelled}` on `{self.ctx.code_for(tensor).strip()}`, which is {explain(value, gap.dtype)}: "
            f"it has no {LONG[gap.dtype]} kernel {gap.where} and raises; compute it in float32 (`.float()`)"
        )
        guard = guard_before(self.ctx, node, tensor)
        if guard is not None:
            # the function's own upcast guard lets the dtype through: the fix belongs to its test
            line = self.ctx.position(node).start.line
            message = (
                f"`{self.ctx.code_for(guard.test).strip()}` upcasts before `{spelled}` (line {line}), but "
                f"`{self.ctx.code_for(tensor).strip()}` is still {explain(value, gap.dtype)} there: the op has no "
                f"{LONG[gap.dtype]} kernel {gap.where} and raises; upcast every low dtype it may get"
            )
            self.report(guard.test, message, confidence=confidence, fix=self._fix(tensor))
            return
        self.report(node, message, confidence=confidence, fix=self._fix(tensor))

    def _check_contract(self, node: cst.Call, gaps: tuple[Gap, ...], tensor: cst.BaseExpression, spelled: str) -> None:
        """A tensor low only by a library's contract (a diffusers scheduler's ``step`` latents,
        facts/lowp_contract.py): the op raises on the path the library documents (a pipeline loaded
        with ``torch_dtype=torch.float16``), whatever else the program does. A dtype merely followed
        (``dtype=x.dtype``) is not enough: that function may never see a low tensor."""
        value = self.ctx.flow.value_of(tensor, follows=True)
        if value is None or value.kind != "tensor":
            return
        hit = [gap for gap in gaps if value.may_be(gap.dtype)
               and isinstance(value.origin_of(gap.dtype), ContractOrigin)]
        if not hit or autocast_enabled_at(self.ctx, node):
            return
        gap = next((g for g in hit if g.everywhere), hit[0])
        origin = value.origin_of(gap.dtype)
        message = (
            f"`{spelled}` on `{self.ctx.code_for(tensor).strip()}`, {condition(origin)}: it has no "
            f"{LONG[gap.dtype]} kernel {gap.where} and raises there; compute it in float32 (`.float()`) "
            f"and cast the result back"
        )
        confidence = Confidence.MEDIUM if gap.everywhere else Confidence.LOW
        self.report(node, message, confidence=confidence, fix=self._fix(tensor))

    def _fix(self, tensor: cst.BaseExpression) -> Fix | None:
        if not is_simple_reference(tensor) and not isinstance(tensor, (cst.Call, cst.Subscript)):
            return None
        text = self.ctx.code_for(tensor).strip()
        return Fix(Safety.UNSAFE, (self.replace(tensor, f"{text}.float()"),), "compute in float32")

"""DTL504 tiny-eps-lowp: an epsilon below float16's smallest subnormal guards nothing in float16."""

from __future__ import annotations

import dataclasses

import libcst as cst

from dtype_lint.facts.flow.library import FP16_TRIGGERS
from dtype_lint.findings import Fix, Safety
from dtype_lint.prefilter import POWER_WORD, magnitude_words
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.facts.numerics import (
    FP16,
    Number,
    argument,
    call_shape,
    confidence_for,
    explain,
    is_simple_reference,
    number,
    vanishes_in_fp16,
)

# Functions whose argument an epsilon keeps away from zero. log-like ones take ``finfo.tiny`` in
# a fix, the others (denominators) ``finfo.eps``: see the rule's doc.
LOG_LIKE = frozenset({"log", "log2", "log10"})
GUARDED = LOG_LIKE | frozenset({"sqrt", "rsqrt", "reciprocal"})
CLAMPS = frozenset({"clamp", "clamp_", "clip", "clip_", "clamp_min", "clamp_min_"})
# torch.nn.functional calls with an ``eps=`` that is applied to the input in its dtype.
EPS_FUNCTIONS = {
    "torch.nn.functional.normalize": 0,
    "torch.nn.functional.cosine_similarity": 0,
    "torch.nn.functional.pairwise_distance": 0,
}


@dataclasses.dataclass(frozen=True)
class _Site:
    tensor: cst.BaseExpression  # the tensor the epsilon is added to / clamps
    eps: cst.BaseExpression  # the epsilon as written
    use: str  # "log", "sqrt", "division", "clamp", "normalize", ...


class TinyEpsLowp(Rule):
    """## What it does
    Flags an epsilon smaller than 6e-8 (`1e-8`, `1e-10`, `1e-12`) that guards a float16 tensor
    against zero: `torch.log(p + 1e-8)`, `x / (norm + 1e-12)`, `torch.rsqrt(var + self.eps)`,
    `t.clamp(min=1e-8)`, `F.normalize(t, eps=1e-12)`. The epsilon may be a literal, a constant of
    the file, a parameter default or `self.eps` set from an `__init__` default (constructions in
    the same file that pass another value are honoured). The tensor's dtype comes from the dtype
    flow and is named in the message; bfloat16 and float32 tensors are not flagged, and neither
    are `nn.LayerNorm(eps=1e-12)` or optimizer `eps=` (fused kernels and DTL404 cover those).

    ## Why is this bad?
    float16's smallest subnormal is 2**-24 ~ 5.96e-8: `1e-8` rounds to 0, so `p + 1e-8` is `p`
    and the guard is gone. `log(0 + 1e-8)` is `-inf`, `1 / (0 + 1e-8)` is `inf`, `rsqrt(0 +
    1e-12)` is `inf`, and the NaN follows a step later (pyg-team/pytorch_geometric#2106).
    Focal and contrastive losses, custom RMSNorm/LayerNorm and cosine similarities written with
    float32 epsilons fail exactly when a model is run in half precision.

    ## Example
    ```python
    probs = logits.softmax(-1)          # float16
    loss = -(targets * torch.log(probs + 1e-8)).sum(-1)
    ```

    ## Use instead
    ```python
    loss = -(targets * torch.log(probs + torch.finfo(probs.dtype).tiny)).sum(-1)
    ```

    ## Fix safety
    Unsafe: it changes numerics in every dtype. Inside `log`/`log2`/`log10` the literal becomes
    `torch.finfo(<tensor>.dtype).tiny`, the smallest normal number (6.1e-5 in float16, 1.2e-38
    in float32): it keeps the logarithm finite while biasing probabilities as little as the dtype
    allows. Everywhere else (denominators, `sqrt`, `rsqrt`, clamps, `normalize`) it becomes
    `torch.finfo(<tensor>.dtype).eps` (9.8e-4 in float16, 1.2e-7 in float32): `1 / tiny`
    = 16384 overflows float16 as soon as the numerator exceeds 4, while `1 / eps` = 1024 leaves
    headroom and stays close to the original 1e-8..1e-6 in float32. Offered only when the
    epsilon is a literal at the site and the tensor is a plain name or attribute. Confidence is
    high when the tensor is float16 on every path, medium when only some paths make it float16.
    """

    code = "DTL504"
    name = "tiny-eps-lowp"
    summary = "Epsilon below 6e-8 rounds to zero on a float16 tensor"
    queries = (
        "the epsilon as a number: a literal, a constant, a parameter default or `self.eps` (facts/numerics.py)",
        "the dtype flow: the dtype of the guarded tensor, and where it came from (facts/dtypes.py, computed by facts/flow/interpreter.py)",
    )
    fix_safety = Safety.UNSAFE
    triggers = FP16_TRIGGERS  # needs a float16 value (see facts/flow/library.py)
    # A positive number below 6e-8: a literal of 1e-8 or less, or a quotient or power that makes one.
    required_triggers = (magnitude_words(-324, -8) + magnitude_words(8, 308) + (POWER_WORD,),)
    valid = (
        # float32 tensor: 1e-8 is representable.
        "import torch\nprobs = torch.rand(4, 10)\nloss = -torch.log(probs + 1e-8).mean()\n",
        # float16 with an epsilon float16 can hold.
        "import torch\nx = torch.randn(4, 10, dtype=torch.float16)\nvar = x.pow(2).mean(-1, keepdim=True)\n"
        "y = x * torch.rsqrt(var + 1e-5)\n",
        # bfloat16 has float32's exponent range.
        "import torch\np = torch.rand(4, 10, dtype=torch.bfloat16)\nloss = -torch.log(p + 1e-8).mean()\n",
    )
    invalid = (
        Invalid(
            "import torch\nprobs = torch.rand(4, 10).half()\nloss = -torch.log(probs + 1e-8).mean()\n",
            fixed="import torch\nprobs = torch.rand(4, 10).half()\nloss = -torch.log(probs + torch.finfo(probs.dtype).tiny).mean()\n",
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nemb = torch.randn(8, 64, dtype=torch.float16)\n"
            "z = F.normalize(emb, dim=-1, eps=1e-12)\n",
            fixed="import torch\nimport torch.nn.functional as F\nemb = torch.randn(8, 64, dtype=torch.float16)\n"
            "z = F.normalize(emb, dim=-1, eps=torch.finfo(emb.dtype).eps)\n",
        ),
        Invalid(
            "import torch\nEPS = 1e-10\na = torch.randn(4, dtype=torch.float16)\nb = torch.randn(4, dtype=torch.float16)\n"
            "ratio = a / (b.abs() + EPS)\n"
        ),
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Add):
            return
        use = self._guarded_use(node)
        if use is None:
            return
        for tensor, eps in ((node.left, node.right), (node.right, node.left)):
            found = self._tiny(eps)
            if found is not None:
                self._check(_Site(tensor, eps, use), found)
                return

    def visit_Call(self, node: cst.Call) -> None:
        shape = call_shape(self.ctx, node)
        if shape is None:
            return
        if shape.name in CLAMPS and (shape.receiver is not None or shape.qualified in ("torch.clamp", "torch.clip", "torch.clamp_min")):
            offset = 0 if shape.receiver is not None else 1
            tensor = shape.receiver if shape.receiver is not None else (node.args[0].value if node.args else None)
            keyword = None if shape.name.startswith("clamp_min") else "min"
            eps = argument(node, keyword, offset)
            if tensor is not None and eps is not None:
                found = self._tiny(eps.value)
                if found is not None:
                    self._check(_Site(tensor, eps.value, "clamp"), found)
            return
        if shape.qualified in EPS_FUNCTIONS:
            tensor = argument(node, "input", EPS_FUNCTIONS[shape.qualified]) or argument(node, "x1", 0)
            eps = argument(node, "eps", None)
            if tensor is not None and eps is not None:
                found = self._tiny(eps.value)
                if found is not None:
                    self._check(_Site(tensor.value, eps.value, shape.name), found)

    # -- helpers ---------------------------------------------------------------------------------
    def _tiny(self, expr: cst.BaseExpression) -> Number | None:
        found = number(self.ctx, expr)
        return found if found is not None and vanishes_in_fp16(found.value) else None

    def _guarded_use(self, node: cst.BinaryOperation) -> str | None:
        """What the sum ``x + eps`` is kept away from zero for, or None when it is not a guard."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.BinaryOperation):
            if parent.right is node and isinstance(parent.operator, cst.Divide):
                return "division"
            if parent.left is node and isinstance(parent.operator, cst.Power):
                exponent = number(self.ctx, parent.right)
                if exponent is not None and exponent.value < 1:
                    return "sqrt" if exponent.value > 0 else "power"
            return None
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = self.ctx.parent(parent)
            if isinstance(call, cst.Call) and call.func is parent and parent.attr.value in GUARDED:
                return parent.attr.value
            return None
        if isinstance(parent, cst.Arg):
            call = self.ctx.parent(parent)
            if not isinstance(call, cst.Call):
                return None
            shape = call_shape(self.ctx, call)
            if shape is None:
                return None
            if shape.qualified is not None and shape.name in GUARDED and call.args and call.args[0] is parent:
                return shape.name
            if shape.name in ("div", "div_", "true_divide") and call.args and call.args[-1] is parent and len(call.args) >= (1 if shape.receiver is not None else 2):
                return "division"
        return None

    def _check(self, site: _Site, found: Number) -> None:
        value = self.ctx.flow.value_of(site.tensor)
        confidence = confidence_for(value, (FP16,))
        if confidence is None:
            return
        eps_text = self.ctx.code_for(site.eps).strip()
        tensor_text = self.ctx.code_for(site.tensor).strip()
        defined = "" if found.literal else f" (= {found.value:g}, {found.where(self.ctx)})"
        effect = {
            "log": "log(0) is -inf",
            "log2": "log2(0) is -inf",
            "log10": "log10(0) is -inf",
            "sqrt": "its gradient at 0 is inf",
            "rsqrt": "rsqrt(0) is inf",
            "reciprocal": "1/0 is inf",
            "division": "dividing by it gives inf at 0",
            "power": "a negative power of 0 is inf",
            "clamp": "the clamp lets 0 through",
            "normalize": "a zero vector normalises to NaN",
            "cosine_similarity": "a zero vector gives NaN",
            "pairwise_distance": "the distance's gradient at 0 is NaN",
        }.get(site.use, "it guards nothing")
        kind = "tiny" if site.use in LOG_LIKE else "eps"
        message = (
            f"`{eps_text}`{defined} rounds to 0 in float16 (smallest subnormal 6e-8): "
            f"`{tensor_text}` is {explain(value, FP16)}; {effect}. "
            f"Use `torch.finfo({tensor_text if is_simple_reference(site.tensor) else '<tensor>'}.dtype).{kind}`"
        )
        self.report(site.eps, message, confidence=confidence, fix=self._fix(site, found, kind))

    def _fix(self, site: _Site, found: Number, kind: str) -> Fix | None:
        if not found.literal or not is_simple_reference(site.tensor):
            return None
        torch = self.module_for_fix("torch")
        if torch is None:
            return None
        name, import_edits = torch
        content = f"{name}.finfo({self.ctx.code_for(site.tensor).strip()}.dtype).{kind}"
        return Fix(Safety.UNSAFE, (*import_edits, self.replace(site.eps, content)), f"use torch.finfo(...).{kind}")

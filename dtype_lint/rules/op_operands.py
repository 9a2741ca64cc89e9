"""DTL107: a matmul, linear or convolution whose two tensor operands have different float dtypes.

The module-level rules (DTL101, DTL102) ask what a *module* and its input are; this one asks the
same of the functional ops, where the weight is a tensor the program built itself (a Gaussian
window for SSIM, a hand-made projection matrix, a filter bank). NumPy float64 operands are
DTL105's; the dtypes come from the dtype flow, never re-derived here.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.dtypes import BF16, FP16, FP32, FP64, Value
from dtype_lint.facts.flow.library import LOWP_TRIGGERS
from dtype_lint.facts.followed import condition, fixed_here, followed_low
from dtype_lint.facts.numerics import call_shape, has_keyword
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.numerics_ops import FACTORIES
from dtype_lint.rules.model_input import (
    FP64_SPELLED,
    code,
    dtype_phrase,
    from_numpy,
    matmul_operands,
    suffix_edit,
)

FLOATS = (FP32, FP16, BF16, FP64)
ATTENTION = "torch.nn.functional.scaled_dot_product_attention"
TORCH_NAMES = {FP32: "Float", FP16: "Half", BF16: "BFloat16", FP64: "Double"}


class OpOperandDtype(Rule):
    """## What it does
    Flags `torch.mm`/`bmm`/`matmul`/`mv`/`addmm`, `a @ b`, `F.linear` and `F.conv1d/2d/3d`
    (and their transposes) called outside autocast on two tensors the dtype flow knows have
    different floating dtypes: half activations convolved with a float32 filter the program
    built (`F.conv2d(img.half(), gaussian_window)`), a float64 tensor multiplied by float32
    weights, a bfloat16 input through a float32 projection matrix. Also
    `F.scaled_dot_product_attention` whose query, key and value differ (keys cast to a
    hard-coded `torch.bfloat16` in a float16 model), or whose float `attn_mask` is a low
    precision other than the query's (a bfloat16 mask with a float16 query; a float32 mask is
    accepted). In a project, the operands include what callers in other files pass a function
    (`ssim(sr.half(), hr.half())` reaching a float32 window inside `ssim`).
    Also a float32 the function fixes itself (a factory without `dtype=`, `.to(torch.float32)`
    not cast back) meeting in one of these ops a tensor whose dtype the same function follows
    (`dtype=x.dtype`, `out.to(x.dtype)`; facts/followed.py): the message states the condition,
    "when `x` is float16/bfloat16", the dtypes the function is written to take. The followed
    tensor may be a local bound to an attribute chain whose dtype the function follows
    (`x = x.to(self.base_layer.weight.dtype)`, `w = self.base_layer.weight.data`: an adapter's
    base weight); a factory's float32 that a loop may replace (`rot = torch.eye(n)`, then
    `rot = m @ rot` per adapter) is reported at the factory.

    ## Why is this bad?
    These ops never promote. Outside autocast they fail: `expected scalar type Half but found
    Float` (conv), `mat1 and mat2 must have the same dtype, but got Double and Float` (linear),
    `expected m1 and m2 to have the same dtype, but got: double != float` (mm). The filter or
    matrix is usually made once in a helper with the default dtype while the data arrives in
    another (NVIDIA/apex#965, an SSIM window on an fp16 super-resolution model). Attention
    fails with `Expected query, key, and value to have the same dtype` or `Expected attn_mask
    dtype to be bool or float or to match query dtype` (Comfy-Org/ComfyUI#8118).

    ## Example
    ```python
    window = torch.ones(3, 1, 11, 11) / 121
    blurred = F.conv2d(images.half(), window, padding=5, groups=3)
    ```

    ## Use instead
    ```python
    window = torch.ones(3, 1, 11, 11) / 121
    images = images.half()
    blurred = F.conv2d(images, window.to(images.dtype), padding=5, groups=3)
    ```

    ## Fix safety
    Unsafe: the fix casts the second operand to the first one's dtype, which may lower its
    precision (a float32 filter to float16) or raise it; which side should move is a choice.
    """

    code = "DTL107"
    name = "op-operand-dtype"
    summary = "Matmul, linear, convolution or attention on tensors of two different float dtypes"
    queries = (
        "the dtype flow: the dtypes of the operands of a matmul, linear, convolution or attention call (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "a tensor whose dtype the function follows, and what its own code says about its precision (facts/followed.py over facts/flow/lowp_evidence.py)",
        "the enabled autocast region around a node, as the dtype flow records it (facts/dtypes.py `autocast_at`)",
    )
    fix_safety = Safety.UNSAFE
    # Two float dtypes meet: one is float16, bfloat16 or a spelled float64.
    # `dtype`: a function that follows a tensor's dtype (`x.dtype`) meets a float32 it fixes (facts/followed.py)
    triggers = LOWP_TRIGGERS + FP64_SPELLED + (exact_word("dtype"),)
    valid = (
        "import torch\nimport torch.nn.functional as F\nw = torch.ones(3, 1, 5, 5)\nx = torch.randn(1, 3, 8, 8).half()\n"
        "y = F.conv2d(x, w.to(x.dtype), groups=3)\n",
        "import torch\na = torch.randn(4, 4, dtype=torch.float16)\nb = torch.randn(4, 4)\n"
        "with torch.autocast('cuda', dtype=torch.float16):\n    c = a @ b\n",
        "import torch\na = torch.randn(4, 4).double()\nb = torch.randn(4, 4).double()\nc = torch.mm(a, b)\n",
        "import torch\nimport torch.nn.functional as F\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.weight = torch.nn.Parameter(torch.randn(4, 4))\n    def forward(self, x):\n        return F.linear(x, self.weight)\n"
        "net = Net().half()\nnet(torch.randn(2, 4).half())\n",
        "import torch\nimport torch.nn.functional as F\nq = torch.randn(1, 2, 4, 8, dtype=torch.float16)\n"
        "out = F.scaled_dot_product_attention(q, q, q, attn_mask=torch.zeros(4, 4))\n",
    )
    invalid = (
        Invalid(
            "import torch\nimport torch.nn.functional as F\nwindow = torch.ones(3, 1, 5, 5)\nimages = torch.rand(1, 3, 8, 8).half()\n"
            "blurred = F.conv2d(images, window, groups=3)\n",
            fixed="import torch\nimport torch.nn.functional as F\nwindow = torch.ones(3, 1, 5, 5)\nimages = torch.rand(1, 3, 8, 8).half()\n"
            "blurred = F.conv2d(images, window.to(images.dtype), groups=3)\n",
        ),
        Invalid(
            "import torch\nx = torch.randn(2, 8, dtype=torch.float64)\nw = torch.randn(8, 4)\ny = x @ w\n",
            fixed="import torch\nx = torch.randn(2, 8, dtype=torch.float64)\nw = torch.randn(8, 4)\ny = x @ w.to(x.dtype)\n",
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nq = torch.randn(1, 2, 4, 8, dtype=torch.float16)\n"
            "k = q.to(torch.bfloat16)\nout = F.scaled_dot_product_attention(q, k, k)\n",
            fixed="import torch\nimport torch.nn.functional as F\nq = torch.randn(1, 2, 4, 8, dtype=torch.float16)\n"
            "k = q.to(torch.bfloat16)\nout = F.scaled_dot_product_attention(q, k.to(q.dtype), k)\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._check(node)

    def _float(self, node: cst.BaseExpression) -> Value | None:
        if _module_state(node):
            return None  # a parameter or buffer: module casts (`.half()`) move it with the module
        value = self.ctx.flow.value_of(node)
        if value is None or value.kind != "tensor" or not value.dtypes or not value.dtypes <= set(FLOATS):
            return None
        return None if value.role == "param" else value

    def _check(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Call) and self._check_attention(node):
            return
        found = matmul_operands(self.ctx, node)
        if found is None or self.ctx.flow.autocast_at(node) is not None:
            return  # autocast casts both operands of these ops to its dtype
        op, operands = found
        values = [(n, self._float(n)) for n in operands]
        known = [(n, v) for n, v in values if v is not None]
        if any(v.may_be(FP64) and from_numpy(self.ctx, v) for _, v in known):
            return  # NumPy float64: DTL105
        if len(known) < 2:
            self._check_followed(op, operands, values)
        for (first_node, first), (other_node, other) in zip(known, known[1:]):
            confidence = self._confidence(first, other)
            if confidence is None:
                continue
            fix = None
            if isinstance(first_node, (cst.Name, cst.Attribute)):
                fix = Fix(
                    Safety.UNSAFE,
                    (suffix_edit(self, other_node, f".to({self.ctx.code_for(first_node)}.dtype)"),),
                    "cast the second operand to the first one's dtype",
                )
            first_name = TORCH_NAMES.get(first.dtype, "Half") if first.certain else "Half"
            other_name = TORCH_NAMES.get(other.dtype, "Float") if other.certain else "Float"
            self.report(
                other_node,
                f"`{code(self.ctx, first_node)}` is {dtype_phrase(first)} but `{code(self.ctx, other_node)}` is "
                f"{dtype_phrase(other)}, and `{op}` outside autocast does not promote: it fails with 'expected "
                f"scalar type {first_name} but found {other_name}' (or 'mat1 and mat2 must have the same dtype'); "
                f"cast one operand to the other's dtype",
                confidence=confidence,
                fix=fix,
            )
            return

    def _check_followed(self, op: str, operands, values) -> None:
        """A float32 operand the function fixes (a factory, a ``.float()``) against one whose dtype
        the function follows (facts/followed.py): the op fails when a caller gives a low dtype."""
        fixed = next(((n, v) for n, v in values if v is not None and v.certain and v.dtype == FP32
                      and fixed_here(self.ctx, n, v)), None)
        at = None
        if fixed is None:
            # float32 on some paths, unknown on others (a loop that may replace it): only a
            # factory without dtype= of this function; the finding goes where the fix goes
            fixed = next(((n, v) for n, v in values if v is not None and v.dtypes == {FP32}
                          and fixed_here(self.ctx, n, v) and self._default_factory(v.origin_of(FP32).node)), None)
            at = fixed[1].origin_of(FP32).node if fixed is not None else None
        if fixed is None:
            return
        for other_node in operands:
            found = followed_low(self.ctx, other_node) if other_node is not fixed[0] and not _module_state(other_node) else None
            if found is None:
                continue
            fixed_node = fixed[0]
            self.report(
                at if at is not None else fixed_node,
                f"`{code(self.ctx, fixed_node)}` is float32 {fixed[1].since(FP32)} and meets "
                f"`{code(self.ctx, other_node)}` in `{op}`: {condition(found[1])}, `{op}` outside autocast does "
                f"not promote and fails with 'expected scalar type Half but found Float' (or 'mat1 and mat2 must "
                f"have the same dtype'); make `{code(self.ctx, fixed_node)}` in the dtype the function follows",
                confidence=Confidence.MEDIUM,
            )
            return

    def _default_factory(self, node: cst.CSTNode) -> bool:
        """``torch.eye(n, device=...)`` & co.: a torch factory called without ``dtype=``."""
        if not isinstance(node, cst.Call):
            return False
        shape = call_shape(self.ctx, node)
        return shape is not None and shape.qualified == f"torch.{shape.name}" and shape.name in FACTORIES \
            and not has_keyword(node, "dtype") and not has_keyword(node, "out")

    def _check_attention(self, node: cst.Call) -> bool:
        """``F.scaled_dot_product_attention``: query, key and value of one dtype, and a float
        ``attn_mask`` float32 or the query's dtype. True when ``node`` is that call."""
        if not any(q == ATTENTION for q in self.ctx.names.qualified_names(node.func)):
            return False
        if self.ctx.flow.autocast_at(node) is not None:
            return True  # autocast casts query, key and value to its dtype
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        named = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        operands = [positional[i] if i < len(positional) else named.get(word)
                    for i, word in enumerate(("query", "key", "value", "attn_mask"))]
        query_node, query = operands[0], self._float(operands[0]) if operands[0] is not None else None
        if query is None:
            return True
        for other_node in operands[1:3]:
            other = self._float(other_node) if other_node is not None else None
            confidence = _attention_confidence(query, other) if other is not None else None
            if confidence is not None:
                self._report_attention(node, query_node, query, other_node, other, confidence,
                                       "'Expected query, key, and value to have the same dtype'")
                return True
        mask_node = operands[3]
        mask = self._float(mask_node) if mask_node is not None else None
        low = mask.dtypes - {FP32} if mask is not None else frozenset()
        if low:  # a float32 mask is accepted with any query; another float must match it
            restricted = mask.with_dtypes(low, mask.origin, partial=mask.partial or FP32 in mask.dtypes)
            restricted = restricted.replace(origins=tuple(o for o in mask.origins if o[0] in low))
            confidence = _attention_confidence(query, restricted)
            if confidence is not None:
                self._report_attention(node, query_node, query, mask_node, restricted, confidence,
                                       "'Expected attn_mask dtype to be bool or float or to match query dtype'",
                                       "the mask")
        return True

    def _report_attention(self, node, query_node, query: Value, other_node, other: Value, confidence, error: str,
                          what: str = "") -> None:
        fix = None
        if isinstance(query_node, (cst.Name, cst.Attribute)):
            fix = Fix(Safety.UNSAFE, (suffix_edit(self, other_node, f".to({self.ctx.code_for(query_node)}.dtype)"),),
                      "cast it to the query's dtype")
        self.report(
            other_node,
            f"the query `{code(self.ctx, query_node)}` is {dtype_phrase(query)} but {what + ' ' if what else ''}"
            f"`{code(self.ctx, other_node)}` is {dtype_phrase(other)}: `F.scaled_dot_product_attention` does not "
            f"promote and fails with {error}; cast it to the query's dtype",
            confidence=confidence,
            fix=fix,
        )

    @staticmethod
    def _confidence(first: Value, other: Value) -> Confidence | None:
        """HIGH: two different certain dtypes, or a certain one the other can never be; MEDIUM:
        a certain dtype against a union that holds another one (a reachable configuration)."""
        if first.certain and other.certain:
            return Confidence.HIGH if first.dtype != other.dtype else None
        certain, union = (first, other) if first.certain else (other, first) if other.certain else (None, None)
        if certain is None:
            return None
        if certain.dtype not in union.dtypes and not union.partial:
            return Confidence.HIGH
        if union.dtypes - {certain.dtype}:
            return Confidence.MEDIUM
        return None


def _attention_confidence(query: Value, other: Value) -> Confidence | None:
    """As for the other ops; also MEDIUM for two values each of one known dtype, different, that
    some path leaves unknown (a bfloat16 mask a branch builds, a float16 default's query)."""
    found = OpOperandDtype._confidence(query, other)
    if found is None and len(query.dtypes) == 1 and len(other.dtypes) == 1 and query.dtypes != other.dtypes:
        return Confidence.MEDIUM
    return found


def _module_state(node: cst.BaseExpression) -> bool:
    """``self.weight``, ``self.proj.weight``: state of a module, whose dtype follows the module's."""
    while isinstance(node, cst.Attribute):
        node = node.value
        if isinstance(node, cst.Name) and node.value == "self":
            return True
    return False

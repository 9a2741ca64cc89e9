"""DTL109: a matrix product of uint8/int8 tensors, which wraps around silently.

The dtype flow has one integer category (``int``); whether an integer tensor is 8-bit is read
from where that dtype came from (the origin the flow records: ``.to(torch.uint8)``, ``.byte()``,
``dtype=torch.uint8``), so no rule needs the lattice to grow for this one question.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.dtypes import INT, Value
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.model_input import code, matmul_operands, suffix_edit

# 8-bit integer dtypes: spelled name -> (dtype, largest value, torch's scalar type name).
NARROW_INTS = {"uint8": ("uint8", 255, "Byte"), "int8": ("int8", 127, "Char")}
NARROW_METHODS = {"byte": "uint8", "char": "int8"}
NARROW_TENSOR_TYPES = {"ByteTensor": "uint8", "CharTensor": "int8"}


def narrow_int(ctx, value: Value | None) -> str | None:
    """``"uint8"``/``"int8"`` when the flow knows ``value`` is an integer tensor made 8-bit by the
    call its integer dtype comes from; None when it is another integer or not known."""
    if value is None or value.kind != "tensor" or value.dtype != INT:
        return None
    origin = value.origin_of(INT)
    integer = getattr(origin, "integer", None)  # passed by a caller in another file (facts/flow/seeding.py)
    if integer:
        return integer if integer in NARROW_INTS else None
    node = origin.node if origin is not None else None
    if isinstance(node, cst.Attribute):  # the dtype itself: ``torch.uint8`` in ``.to(torch.uint8)``
        return node.attr.value if node.attr.value in NARROW_INTS else None
    if not isinstance(node, cst.Call):
        return None
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in NARROW_METHODS and not node.args:
        return NARROW_METHODS[node.func.attr.value]
    spelled_func = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", None)
    if spelled_func in NARROW_TENSOR_TYPES:
        return NARROW_TENSOR_TYPES[spelled_func]
    casts = isinstance(node.func, cst.Attribute) and node.func.attr.value in ("to", "type")
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value != "dtype":
            continue
        if arg.keyword is None and not casts:
            continue
        spelled = arg.value.attr.value if isinstance(arg.value, cst.Attribute) else None
        if spelled is None and isinstance(arg.value, cst.SimpleString):
            spelled = str(arg.value.evaluated_value).rsplit(".", 1)[-1]
        if spelled in NARROW_INTS:
            return spelled
    return None


class NarrowIntMatmul(Rule):
    """## What it does
    Flags `a @ b`, `torch.matmul`/`mm`/`bmm`/`mv` (and the `.mm()`-style methods) whose operands
    the dtype flow knows are uint8 or int8 tensors: masks cast with `.to(torch.uint8)` or
    `.byte()`, or made with `dtype=torch.uint8`, multiplied to count overlaps.

    ## Why is this bad?
    The product of two uint8 tensors is uint8: every entry of the result is a sum of products
    taken modulo 256, so an intersection of 300 pixels reads 44. On the CPU nothing fails, the
    counts silently wrap (ultralytics/ultralytics#15782, mask IoU above 1 or below 0); on CUDA
    the op raises `"addmm_cuda" not implemented for 'Byte'`. `sum()` and `cumsum()` promote
    8-bit integers to int64; matrix products do not.

    ## Example
    ```python
    masks = pred_masks.gt(0.5).to(torch.uint8)
    intersection = masks @ gt_masks.to(torch.uint8).T
    ```

    ## Use instead
    ```python
    masks = pred_masks.gt(0.5).float()
    intersection = masks @ gt_masks.float().T
    ```

    ## Fix safety
    Unsafe: the fix appends `.float()` to each operand, so the result is float32 (exact for
    counts up to 2**24) where the code may expect an integer tensor.
    """

    code = "DTL109"
    name = "narrow-int-matmul"
    summary = "Matmul of uint8/int8 tensors (sums wrap past 255/127)"
    queries = (
        "the dtype flow: whether both operands of a matmul are uint8 or int8 tensors (facts/dtypes.py, computed by facts/flow/interpreter.py)",
    )
    fix_safety = Safety.UNSAFE
    triggers = (exact_word("uint8"), exact_word("int8"), exact_word("byte"), exact_word("char"),
                exact_word("ByteTensor"), exact_word("CharTensor"))
    valid = (
        "import torch\nm = torch.ones(2, 300, dtype=torch.uint8)\nn = m.float() @ m.float().T\n",
        "import torch\nm = torch.ones(2, 300, dtype=torch.uint8)\ncount = m.sum(1)\n",
        "import torch\nm = torch.ones(2, 300).long()\nn = m @ m.T\n",
    )
    invalid = (
        Invalid(
            "import torch\nm1 = torch.rand(2, 300).gt(0.5).to(torch.uint8)\nm2 = torch.rand(3, 300).gt(0.5).to(torch.uint8)\n"
            "inter = torch.matmul(m1, m2.T)\n",
            fixed="import torch\nm1 = torch.rand(2, 300).gt(0.5).to(torch.uint8)\nm2 = torch.rand(3, 300).gt(0.5).to(torch.uint8)\n"
            "inter = torch.matmul(m1.float(), m2.T.float())\n",
        ),
        Invalid(
            "import torch\nonehot = (torch.randint(0, 5, (1000, 1)) == torch.arange(5)).byte()\nconfusion = onehot.T @ onehot\n",
            fixed="import torch\nonehot = (torch.randint(0, 5, (1000, 1)) == torch.arange(5)).byte()\nconfusion = onehot.T.float() @ onehot.float()\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._check(node)

    def _check(self, node: cst.CSTNode) -> None:
        found = matmul_operands(self.ctx, node)
        if found is None:
            return
        op, operands = found
        if len(operands) < 2 or op.startswith("F."):
            return  # linear/conv on integers raise at once; nothing silent there
        narrow = [narrow_int(self.ctx, self.ctx.flow.value_of(operand)) for operand in operands]
        if any(kind is None for kind in narrow):
            return
        dtype, largest, torch_name = NARROW_INTS[narrow[0]]
        fix = Fix(
            Safety.UNSAFE,
            tuple(suffix_edit(self, operand, ".float()") for operand in operands),
            "multiply in float32",
        )
        self.report(
            node,
            f"`{code(self.ctx, operands[0])}` and `{code(self.ctx, operands[1])}` are {dtype} tensors: `{op}` keeps "
            f"{dtype}, so each sum of products wraps past {largest} (silently on the CPU; CUDA raises "
            f"'not implemented for {torch_name}'); multiply in float32 (`.float()`) or int64",
            confidence=Confidence.HIGH,
            fix=fix,
        )

"""DTL501 overflow-literal and DTL502 additive-mask-nan: the values attention masks are filled with."""

from __future__ import annotations

import dataclasses
import math

import libcst as cst

from dtype_lint.facts.amp import dtype_literal
from dtype_lint.facts.flow.library import FP16_TRIGGERS
from dtype_lint.facts.training import walk
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.prefilter import INFINITY_WORD, POWER_WORD, exact_word, magnitude_words
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.facts.numerics import (
    FP16,
    SHAPE_PRESERVING,
    TORCH_SHAPE_FUNCS,
    Number,
    argument,
    call_shape,
    confidence_for,
    explain,
    facts,
    format_number,
    is_simple_reference,
    number,
    overflows_fp16,
)

# Calls that write a scalar into a tensor: name -> (tensor operand, value operand), where an
# operand is ("receiver", None) or (keyword, position) of the call's arguments.
FILLS = {
    "masked_fill": (("receiver", None), ("value", 1)),
    "masked_fill_": (("receiver", None), ("value", 1)),
    "fill_": (("receiver", None), ("value", 0)),
    "new_full": (("receiver", None), ("fill_value", 1)),
}
TORCH_FILLS = {
    "masked_fill": (("input", 0), ("value", 2)),
    "full_like": (("input", 0), ("fill_value", 1)),
    "full": (None, ("fill_value", 1)),
}


@dataclasses.dataclass(frozen=True)
class _Site:
    tensor: cst.BaseExpression | None  # the tensor the literal lands in (None: a factory)
    value: cst.BaseExpression
    result: cst.BaseExpression  # the expression whose dtype the literal takes


class OverflowLiteral(Rule):
    """## What it does
    Flags a number beyond float16's range (|x| > 65504, such as `-1e9`, `1e5`, `float(2**30)`)
    written into a tensor that is, or may be, float16: `masked_fill`, `fill_`, `torch.full`,
    `new_full`, `full_like`, `torch.where`, and `+ - *` on the tensor. The dtype comes from the
    dtype flow (`model.half()`, `dtype=torch.float16`, `from_pretrained(torch_dtype=...)`, fp16
    autocast outputs); the message says which dtype was inferred and from where. Nothing is
    reported for bfloat16 or float32 tensors (`-1e9` fits both) or when the dtype is unknown.
    A constant defined elsewhere in the file (`NEG_INF = -1e9`) counts as the literal. Under a
    float16 autocast region a matmul, linear or conv result (`q @ k.transpose(...)`,
    `torch.matmul`, `bmm`, `einsum`, `nn.Linear`) is float16; the whole-program pass carries the
    region into the `forward` of a model called there (`model(x)` in another function or file,
    `self.model(x)`, a submodule, a model a framework runs under autocast: `Trainer(precision=
    "16-mixed")`, `Accelerator(mixed_precision="fp16")`, `TrainingArguments(fp16=True)`), and
    the message names it: "`PathReasoner.forward` runs under float16 autocast (train.py:9, ...)".
    A class cast, or handed to DeepSpeed/Lightning with a float16 setting, in another file is
    checked under that world, and so is the `__call__` of a logits processor given to
    `generate()` of a float16 model (its `scores` are float16): medium confidence.

    ## Why is this bad?
    float16's largest finite value is 65504. `masked_fill`/`full`/`fill_` raise
    `value cannot be converted to type c10::Half without overflow`; `torch.where` and arithmetic
    silently turn the value into `±inf`, and `inf - inf` or `0 * inf` later give NaN
    (facebookresearch/fairseq#3575, NVIDIA/apex#1105). Attention code written for float32
    (`scores.masked_fill(mask == 0, -1e9)`) breaks the day the model is run in half precision.

    ## Example
    ```python
    model = model.half()
    scores = torch.matmul(q, k.transpose(-1, -2))  # float16
    scores = scores.masked_fill(mask == 0, -1e9)
    ```

    ## Use instead
    ```python
    scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
    ```

    ## Fix safety
    Unsafe: the literal becomes `torch.finfo(<tensor>.dtype).min` (or `.max` for a positive
    literal), which changes the value in float32 too (-3.4e38 instead of -1e9). Masks filled
    with the dtype's minimum must not then be *added* together (see DTL502). The fix is offered
    for fills and `torch.where` (not for arithmetic, where the right bound depends on intent),
    when the literal is written at the call and the tensor is a plain name or attribute.
    Confidence is high when the tensor is float16 on every path, medium when only some paths
    (or a union such as `torch.float16 if args.fp16 else torch.float32`) make it float16.
    """

    code = "DTL501"
    name = "overflow-literal"
    summary = "Literal beyond float16's range (|x| > 65504) written into a float16 tensor"
    queries = (
        "the number a literal or a constant of the file stands for (facts/numerics.py)",
        "the dtype flow: the dtype of the tensor written to, and where it came from (facts/dtypes.py, computed by facts/flow/interpreter.py)",
    )
    fix_safety = Safety.UNSAFE
    triggers = FP16_TRIGGERS  # needs a float16 value (see facts/flow/library.py)
    # A finite number beyond 65504: a literal of 1e4 or more (possibly inside a string, or in a
    # constant the value reaches through a name), or a power of smaller ones.
    required_triggers = (magnitude_words(4, 308) + (POWER_WORD,),)
    valid = (
        # bfloat16 has float32's range: -1e9 fits.
        "import torch\nscores = torch.randn(2, 4, 4, dtype=torch.bfloat16)\nmask = torch.ones(2, 4, 4, dtype=torch.bool)\n"
        "scores = scores.masked_fill(mask, -1e9)\n",
        # -10000.0 (BERT's additive mask) fits float16.
        "import torch\nx = torch.randn(2, 8, dtype=torch.float16)\nmask = torch.ones(2, 8, dtype=torch.float16)\n"
        "x = x + (1.0 - mask) * -10000.0\n",
        # float32 scores, and float('-inf') is representable in float16 anyway.
        "import torch\nscores = torch.randn(4, 4)\nscores = scores.masked_fill(scores > 0, -1e9)\n"
        "h = torch.zeros(4, 4, dtype=torch.float16).masked_fill(scores > 0, float('-inf'))\n",
        # the same forward under bfloat16 autocast: -1e9 fits bfloat16
        "import torch\nclass Attention(torch.nn.Module):\n    def forward(self, q, k, mask):\n"
        "        scores = q @ k.transpose(-2, -1)\n        return scores.masked_fill(mask, -1e9)\n\n"
        "def train(q, k, mask):\n    model = Attention()\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "        model(q, k, mask).sum().backward()\n",
    )
    invalid = (
        Invalid(
            "import torch\nscores = torch.randn(2, 4, 4, dtype=torch.float16)\nmask = scores > 0\n"
            "scores = scores.masked_fill(mask, -1e9)\n",
            fixed="import torch\nscores = torch.randn(2, 4, 4, dtype=torch.float16)\nmask = scores > 0\n"
            "scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)\n",
        ),
        Invalid(
            "import torch as T\nbias = T.full((8, 8), float(2**30), dtype=T.half)\n",
            fixed="import torch as T\nbias = T.full((8, 8), T.finfo(T.half).max, dtype=T.half)\n",
        ),
        Invalid(
            "import torch\nNEG_INF = -1e9\nlogits = torch.randn(4, 10).half()\n"
            "logits = torch.where(logits > 0, logits, NEG_INF)\n"
        ),
        Invalid("import torch\nx = torch.randn(4, 10, dtype=torch.float16)\ny = x * 1e5\n"),
        # a forward written for float32, trained under float16 autocast: the matmul is float16
        Invalid(
            "import torch\nclass Attention(torch.nn.Module):\n    def forward(self, q, k, mask):\n"
            "        scores = q @ k.transpose(-2, -1)\n        return scores.masked_fill(mask, -1e9)\n\n"
            "def train(q, k, mask):\n    model = Attention()\n    with torch.autocast('cuda', dtype=torch.float16):\n"
            "        model(q, k, mask).sum().backward()\n",
            fixed="import torch\nclass Attention(torch.nn.Module):\n    def forward(self, q, k, mask):\n"
            "        scores = q @ k.transpose(-2, -1)\n        return scores.masked_fill(mask, torch.finfo(scores.dtype).min)\n\n"
            "def train(q, k, mask):\n    model = Attention()\n    with torch.autocast('cuda', dtype=torch.float16):\n"
            "        model(q, k, mask).sum().backward()\n",
        ),
    )

    # -- sites ---------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        site = self._fill_site(node)
        if site is not None:
            self._check(node, site, call=node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply)):
            return
        for tensor, value in ((node.left, node.right), (node.right, node.left)):
            if self._overflowing(value) is not None and _is_tensor(self.ctx, tensor):
                self._check(node, _Site(tensor, value, node), call=None)
                return

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign)):
            if _is_tensor(self.ctx, node.target):
                self._check(node, _Site(node.target, node.value, node.target), call=None)

    def visit_Assign(self, node: cst.Assign) -> None:
        # ``scores[mask] = -1e9``: index_put with a scalar that must fit the tensor's dtype.
        for target in node.targets:
            if isinstance(target.target, cst.Subscript) and _is_tensor(self.ctx, target.target.value):
                self._check(node, _Site(target.target.value, node.value, target.target.value), call=None)

    # -- checking --------------------------------------------------------------------------------
    def _overflowing(self, expr: cst.BaseExpression) -> Number | None:
        found = number(self.ctx, expr)
        return found if found is not None and overflows_fp16(found.value) else None

    def _fill_site(self, call: cst.Call) -> _Site | None:
        shape = call_shape(self.ctx, call)
        if shape is None:
            return None
        if shape.qualified is None and shape.receiver is not None and shape.name in FILLS:
            _, (keyword, position) = FILLS[shape.name]
            value = argument(call, keyword, position)
            return _Site(shape.receiver, value.value, call) if value is not None else None
        if shape.qualified is not None and shape.qualified.startswith("torch.") and shape.name in TORCH_FILLS:
            tensor_spec, (keyword, position) = TORCH_FILLS[shape.name]
            value = argument(call, keyword, position)
            tensor = argument(call, *tensor_spec) if tensor_spec is not None else None
            if value is None:
                return None
            return _Site(tensor.value if tensor is not None else None, value.value, call)
        if shape.name == "where":
            return self._where_site(call, shape)
        return None

    def _where_site(self, call: cst.Call, shape) -> _Site | None:
        if shape.qualified == "torch.where":
            operands = [argument(call, "input", 1), argument(call, "other", 2)]
        elif shape.qualified is None and shape.receiver is not None:
            operands = [cst.Arg(shape.receiver), argument(call, "other", 1)]
        else:
            return None
        if any(op is None for op in operands):
            return None
        first, second = operands[0].value, operands[1].value
        if self._overflowing(second) is not None and number(self.ctx, first) is None:
            return _Site(first, second, call)
        if self._overflowing(first) is not None and number(self.ctx, second) is None:
            return _Site(second, first, call)
        return None

    def _check(self, node: cst.CSTNode, site: _Site, call: cst.Call | None) -> None:
        found = self._overflowing(site.value)
        if found is None:
            return
        value, described = self._dtype(site, call)
        confidence = confidence_for(value, (FP16,))
        if confidence is None:
            return
        literal = self.ctx.code_for(site.value).strip()
        written = "" if found.literal else f" (= {format_number(found.value)}, {found.where(self.ctx)})"
        if call is not None:
            effect = "raises 'value cannot be converted to type c10::Half without overflow'"
            if isinstance(call, cst.Call) and call_shape(self.ctx, call).name == "where":
                effect = f"becomes {'-' if found.value < 0 else ''}inf"
        else:
            effect = f"overflows to {'-' if found.value < 0 else ''}inf"
        # a factory given ``dtype=torch.float16`` needs no "since": the literal is the origin
        literal_dtype = dtype_literal(self.ctx.names, _dtype_argument(call)) if site.tensor is None else None
        if literal_dtype is not None:
            dtype_words = f"the new tensor is {literal_dtype} ({described})"
        else:
            dtype_words = f"{described} is {explain(value, FP16)}"
        message = (
            f"`{literal}`{written} is beyond float16's range (max 65504): {dtype_words}; the value {effect}. Use "
            f"`torch.finfo(<tensor>.dtype).{'min' if found.value < 0 else 'max'}`"
        )
        self.report(site.value, message, confidence=confidence, fix=self._fix(site, found, call))

    def _dtype(self, site: _Site, call: cst.Call | None):
        """The flow's value for where the literal lands, and how to name it in the message."""
        if site.tensor is None and call is not None:
            dtype = argument(call, "dtype", None)
            if dtype is not None:
                literal = dtype_literal(self.ctx.names, dtype.value)
                value = self.ctx.flow.value_of(dtype.value)
                if value is None or not value.dtypes:
                    value = self.ctx.flow.value_of(call)
                if (value is None or not value.dtypes) and literal == "float16":
                    value = _literal_fp16(self.ctx, dtype.value)
                return value, f"`dtype={self.ctx.code_for(dtype.value).strip()}`"
            return self.ctx.flow.value_of(call), "the new tensor"
        value = self.ctx.flow.value_of(site.tensor)
        if (value is None or not value.dtypes) and call is not None:
            value = self.ctx.flow.value_of(call)
        return value, f"`{self.ctx.code_for(site.tensor).strip()}`"

    def _fix(self, site: _Site, found: Number, call: cst.Call | None) -> Fix | None:
        if call is None or not found.literal:
            return None
        torch = self.module_for_fix("torch")
        if torch is None:
            return None
        name, import_edits = torch
        bound = "min" if found.value < 0 else "max"
        if site.tensor is not None and is_simple_reference(site.tensor):
            reference = f"{self.ctx.code_for(site.tensor).strip()}.dtype"
        elif site.tensor is None and argument(call, "dtype", None) is not None:
            dtype = argument(call, "dtype", None).value
            if not is_simple_reference(dtype):
                return None
            reference = self.ctx.code_for(dtype).strip()
        else:
            return None
        content = f"{name}.finfo({reference}).{bound}"
        edits = (*import_edits, self.replace(site.value, content))
        return Fix(Safety.UNSAFE, edits, f"use torch.finfo(...).{bound}")


def _dtype_argument(call: cst.Call | None) -> cst.BaseExpression | None:
    found = argument(call, "dtype", None) if call is not None else None
    return found.value if found is not None else None


def _is_tensor(ctx, expr: cst.BaseExpression) -> bool:
    value = ctx.flow.value_of(expr)
    return value is not None and value.kind == "tensor"


def _literal_fp16(ctx, node: cst.BaseExpression):
    """A stand-in flow value for ``dtype=torch.float16`` when the flow has not recorded one."""
    from dtype_lint.facts.dtypes import Origin, Value

    position = ctx.position(node)
    origin = Origin(node, lambda n: (position.start.line, ctx.code_for(n).strip()))
    return Value(kind="dtype", dtypes=frozenset({FP16}), origins=((FP16, origin),))


# -- DTL502 ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Saturation:
    """An additive mask filled with the dtype's extreme (``finfo.min``) or ``-inf``."""

    fill: str  # "torch.finfo(dtype).min" as written
    node: cst.CSTNode  # where it is filled

    def describe(self, ctx) -> str:
        return f"filled with `{self.fill}` at line {ctx.position(self.node).start.line}"


def saturated_scalar(ctx, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """``torch.finfo(dtype).min``, ``-torch.finfo(dtype).max``, ``float("-inf")``, ``-1e38``...
    also through a local name (``min_value = torch.finfo(dtype).min``)."""
    if isinstance(expr, cst.Name) and depth < 4:
        reaching = facts(ctx).reaching(expr)
        if reaching and all(saturated_scalar(ctx, value, depth + 1) for value, _ in reaching):
            return True
    if isinstance(expr, cst.Attribute) and expr.attr.value == "min" and isinstance(expr.value, cst.Call):
        return ctx.names.matches(expr.value.func, "torch.finfo", "numpy.finfo") is not None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = expr.expression
        if isinstance(inner, cst.Attribute) and inner.attr.value == "max" and isinstance(inner.value, cst.Call):
            return ctx.names.matches(inner.value.func, "torch.finfo", "numpy.finfo") is not None
    if isinstance(expr, cst.Call) and ctx.names.matches(expr.func, "torch.tensor", "torch.as_tensor", "torch.scalar_tensor"):
        return bool(expr.args) and saturated_scalar(ctx, expr.args[0].value)
    found = number(ctx, expr)
    return found is not None and (found.value == -math.inf or (math.isfinite(found.value) and found.value <= -1e38))


class _Saturations:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._functions: dict[int, Saturation | None] = {}

    def of(self, expr: cst.BaseExpression, depth: int = 0) -> Saturation | None:
        if depth > 8:
            return None
        ctx = self.ctx
        if isinstance(expr, cst.Name):
            reaching = [value for value, _ in facts(ctx).reaching(expr)] or facts(ctx).passed(expr)
            for value in reaching:
                found = self.of(value, depth + 1)
                if found is not None:
                    return found
            return None
        if isinstance(expr, cst.Subscript):
            return self.of(expr.value, depth + 1)
        if isinstance(expr, cst.IfExp):
            return self.of(expr.body, depth + 1) or self.of(expr.orelse, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
            for side in (expr.left, expr.right):
                if saturated_scalar(ctx, side):
                    return Saturation(ctx.code_for(side).strip(), expr)
            return None
        if not isinstance(expr, cst.Call):
            return None
        shape = call_shape(ctx, expr)
        if shape is None:
            return None
        fill = None
        if shape.name in ("masked_fill", "masked_fill_", "full", "new_full", "full_like", "fill_"):
            spec = (TORCH_FILLS if shape.qualified else FILLS).get(shape.name)
            if spec is not None:
                fill = argument(expr, *spec[1])
        elif shape.name == "where":
            for keyword, position in (("input", 1), ("other", 2)) if shape.qualified else (("other", 1),):
                arg = argument(expr, keyword, position)
                if arg is not None and saturated_scalar(ctx, arg.value):
                    fill = arg
        if fill is not None and saturated_scalar(ctx, fill.value):
            return Saturation(ctx.code_for(fill.value).strip(), expr)
        if shape.qualified is not None and shape.name in ("cat", "concat", "stack") and expr.args:
            first = expr.args[0].value
            if isinstance(first, (cst.List, cst.Tuple)):
                for element in first.elements:
                    found = self.of(element.value, depth + 1)
                    if found is not None:
                        return found
            return None
        if shape.name in SHAPE_PRESERVING and shape.receiver is not None:
            return self.of(shape.receiver, depth + 1)
        if shape.qualified is not None and shape.name in TORCH_SHAPE_FUNCS and expr.args:
            return self.of(expr.args[0].value, depth + 1)
        if shape.qualified is None and shape.receiver is None:
            return self._returned(shape.name, depth)
        if shape.receiver is not None and isinstance(shape.receiver, cst.Name) and shape.receiver.value in ("self", "cls"):
            return self._returned(shape.name, depth)
        return None

    def _returned(self, function_name: str, depth: int) -> Saturation | None:
        function = facts(self.ctx).function(function_name)
        if function is None:
            return None
        key = id(function)
        if key in self._functions:
            return self._functions[key]
        self._functions[key] = None  # recursion guard
        found = None
        for returned in _returns(function):
            found = self.of(returned, depth + 1)
            if found is not None:
                break
        self._functions[key] = found
        return found


def may_hold_inf(ctx, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Scores that may hold ``-inf`` in float16, so that a fully masked row's softmax is NaN:
    scores plus an additive mask filled with ``finfo.min`` / ``-inf`` (``finfo(float16).min``
    plus any score below -16 overflows), or filled with ``-inf``, or by ``torch.where`` with a
    value beyond float16's range (``torch.where(mask, x, -1e30)``; ``masked_fill(mask, -1e9)``
    raises instead). A fill with
    ``finfo.min`` itself is finite, and a clamp back to the minimum (``torch.max(x, finfo.min)``,
    ``x.clamp(min=...)``) makes the scores finite again."""
    if depth > 6:
        return False
    if isinstance(expr, cst.Name):
        reaching = [value for value, _ in facts(ctx).reaching(expr)] or facts(ctx).passed(expr)
        return any(may_hold_inf(ctx, value, depth + 1) for value in reaching)
    if isinstance(expr, cst.Subscript):
        return may_hold_inf(ctx, expr.value, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, (cst.Add, cst.Subtract)):
            saturations = _Saturations(ctx)
            if saturations.of(expr.left) is not None or saturations.of(expr.right) is not None:
                return True
        if isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)):
            return may_hold_inf(ctx, expr.left, depth + 1) or may_hold_inf(ctx, expr.right, depth + 1)
        return False
    if not isinstance(expr, cst.Call):
        return False
    shape = call_shape(ctx, expr)
    if shape is None:
        return False
    if shape.name in ("max", "maximum", "clamp", "clamp_", "clip"):
        return False
    fill = None
    if shape.name in ("masked_fill", "masked_fill_"):
        spec = (TORCH_FILLS if shape.qualified else FILLS)[shape.name]
        fill = argument(expr, *spec[1])
    elif shape.name == "where":
        fill = argument(expr, "other", 2 if shape.qualified else 1)
    if fill is not None:
        found = number(ctx, fill.value)
        # a float16 ``masked_fill`` with a value beyond its range raises ("value cannot be
        # converted to type c10::Half without overflow", DTL501) rather than writing -inf;
        # ``torch.where`` rounds the scalar to -inf
        overflows = found is not None and overflows_fp16(found.value) and shape.name == "where"
        if found is not None and (found.value == -math.inf or overflows):
            return True
    if shape.name == "add" and shape.qualified is not None and len(expr.args) >= 2:
        saturations = _Saturations(ctx)
        if any(saturations.of(arg.value) is not None for arg in expr.args[:2]):
            return True
    inner = shape.receiver if shape.receiver is not None else (expr.args[0].value if expr.args else None)
    if inner is not None and (shape.name in SHAPE_PRESERVING or shape.name in ("masked_fill", "masked_fill_", "div", "mul", "add", "float")):
        return may_hold_inf(ctx, inner, depth + 1)
    return False


def _returns(function: cst.FunctionDef) -> list[cst.BaseExpression]:
    # not into nested defs and lambdas: their returns are theirs
    return [node.value for node in walk(function) if isinstance(node, cst.Return) and node.value is not None]


class AdditiveMaskNan(Rule):
    """## What it does
    Flags the sum of two additive attention masks that are each filled with the dtype's
    minimum (`torch.finfo(dtype).min`) or `-inf`: `causal_mask + padding_mask`,
    `mask += expanded_mask`, including masks returned by helper functions of the same file
    (`_make_causal_mask(...) + _expand_mask(...)`). It follows names, `.to()`, `.expand()`,
    indexing, helpers and a function's parameters to what this file's calls pass; it needs no
    dtype (the overflow happens in every dtype).

    ## Why is this bad?
    `finfo.min + finfo.min` overflows to `-inf`, in float32 as much as in float16. Positions
    masked by both masks then hold `-inf`; a row whose entries are all `-inf` (a padding query,
    a left-padded batch) goes through softmax as `exp(-inf - (-inf))` = NaN, and the NaN spreads
    to the loss and every gradient (huggingface/transformers#27114, NVIDIA-NeMo/Automodel#2658).
    In float16, scores below -16 plus `finfo.min` (-65504) overflow the same way
    (huggingface/transformers#17306, #18057).

    Not flagged when every row keeps a finite entry: a causal mask built with `triu(1)` never
    masks a query's own position, so added to a mask with a finite fill (finfo.min) the diagonal
    holds at most one finfo.min and no row is all -inf.

    ## Example
    ```python
    padding = (1.0 - attention_mask[:, None, None, :]) * torch.finfo(dtype).min
    cross = (1.0 - encoder_mask[:, None, None, :]) * torch.finfo(dtype).min
    scores = scores + (padding + cross)
    ```

    ## Use instead
    ```python
    keep = attention_mask[:, None, None, :].bool() & encoder_mask[:, None, None, :].bool()
    scores = scores.masked_fill(~keep, torch.finfo(dtype).min)
    ```

    ## Fix safety
    No fix: combining the masks with `masked_fill`/`torch.where` (so each masked position holds
    one `finfo.min`) needs the boolean mask, which the sum no longer shows.
    """

    code = "DTL502"
    name = "additive-mask-nan"
    summary = "Two finfo.min / -inf additive masks added together overflow to -inf (NaN after softmax)"
    queries = (
        "the values that reach a mask: assignments, helper returns and what the file's calls pass a parameter (facts/numerics.py); no dtype",
    )
    # What a saturated fill is written with: finfo, an inf name or string, or a literal of 1e38 or more.
    triggers = ("finfo", exact_word(INFINITY_WORD)) + tuple(exact_word(name) for name in ("inf", "Inf", "PINF")) + magnitude_words(38, 308)
    valid = (
        # one saturated mask, combined with a boolean mask by masked_fill: never -inf.
        "import torch\ndef mask(attention_mask, T, dtype):\n    causal = torch.full((T, T), torch.finfo(dtype).min).triu(1)\n"
        "    return causal.masked_fill(attention_mask[:, None, None, :] == 0, torch.finfo(dtype).min)\n",
        # a causal triu(1) never masks the diagonal and the padding fill is finite: each row keeps
        # a finite entry (lerobot's molmoact2)
        "import torch\ndef mask(attention_mask, T, dtype):\n"
        "    causal = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)\n"
        "    causal = causal.unsqueeze(0).to(dtype=dtype) * torch.finfo(dtype).min\n"
        "    padding = (1.0 - attention_mask[:, None, None, :]) * torch.finfo(dtype).min\n"
        "    return padding + causal\n",
        # BERT-style -10000.0 masks can be added without overflowing.
        "import torch\ndef combine(a, b):\n    causal = (1.0 - a) * -10000.0\n    padding = (1.0 - b) * -10000.0\n"
        "    return causal + padding\n",
        # a saturated mask added to scores (not to another mask).
        "import torch\ndef attend(scores, m):\n    bias = torch.zeros_like(scores).masked_fill(m, float('-inf'))\n"
        "    return (scores + bias).softmax(-1)\n",
    )
    invalid = (
        Invalid(
            "import torch\ndef mask(attention_mask, encoder_mask, dtype):\n"
            "    padding = (1.0 - attention_mask[:, None, None, :]) * torch.finfo(dtype).min\n"
            "    cross = (1.0 - encoder_mask[:, None, None, :]) * torch.finfo(dtype).min\n"
            "    return padding + cross\n"
        ),
        Invalid(
            "import torch\ndef causal_mask(T):\n    return torch.full((T, T), float('-inf')).triu(1)\n"
            "def combine(pad, T):\n    m = causal_mask(T)\n"
            "    m += torch.zeros(pad.shape).masked_fill(pad, float('-inf'))\n    return m\n"
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._saturations = _Saturations(ctx)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Add):
            self._check(node, node.left, node.right)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._check(node, node.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.names.matches(node.func, "torch.add") and len(node.args) >= 2:
            self._check(node, node.args[0].value, node.args[1].value)

    def _check(self, node: cst.CSTNode, left: cst.BaseExpression, right: cst.BaseExpression) -> None:
        first = self._saturations.of(left)
        if first is None:
            return
        second = self._saturations.of(right)
        if second is None:
            return
        if self._diagonal_stays_finite(left, first, right, second):
            return  # every row keeps a finite entry (its diagonal): -inf entries, but never a NaN row
        # A file that clamps scores back to finfo.min (``torch.max(attn, finfo.min)``) turns the
        # -inf back into a finite minimum before softmax; the sum is then only a heuristic risk.
        confidence = Confidence.LOW if self._clamps_to_minimum() else Confidence.MEDIUM
        code = self.ctx.code_for
        message = (
            f"`{code(left).strip()}` ({first.describe(self.ctx)}) + `{code(right).strip()}` "
            f"({second.describe(self.ctx)}): positions masked by both become -inf "
            f"({'finfo.min + finfo.min overflows in every dtype' if not (_infinite(first.fill) or _infinite(second.fill)) else 'and stay -inf'}) "
            "and a fully masked row's softmax is NaN; combine the masks with `masked_fill`/`torch.where` instead"
        )
        self.report(node, message, confidence=confidence)

    def _diagonal_stays_finite(self, left, first, right, second) -> bool:
        """A row's softmax is NaN only when every entry is -inf. A query's own position (the
        diagonal) is -inf only if both masks mask it (finfo.min + finfo.min) or a mask filled
        with -inf itself masks it. So the sum is harmless when one mask never masks the diagonal
        (a causal ``triu(1)``) and the other's fill is finite, or neither masks it (lerobot's
        molmoact2: causal + key padding, both finfo.min)."""
        keeps_left, keeps_right = self._keeps_diagonal(left), self._keeps_diagonal(right)
        finite_left, finite_right = not _infinite(first.fill), not _infinite(second.fill)
        return (keeps_left and keeps_right) or (keeps_left and finite_right) or (keeps_right and finite_left)

    def _keeps_diagonal(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """The mask is built with ``triu(diagonal >= 1)`` / ``tril(diagonal <= -1)`` (a causal or
        window mask that never masks a query's own position), through names it is assigned from
        (``causal = causal.unsqueeze(0).to(dtype) * finfo.min`` after ``causal = ones.triu(1)``)."""
        if depth > 3:
            return False
        if isinstance(expr, cst.Name):
            reaching = facts(self.ctx).reaching(expr)
            return bool(reaching) and all(self._keeps_diagonal(value, depth + 1) for value, _ in reaching)
        for node in walk(expr):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name) \
                    and node.func.value.value not in ("torch", "F") and self._keeps_diagonal(node.func.value, depth + 1):
                return True  # a method chain on a mask that keeps it
            if not isinstance(node, cst.Call):
                continue
            shape = call_shape(self.ctx, node)
            if shape is None or shape.name not in ("triu", "tril", "triu_", "tril_"):
                continue
            # ``torch.triu(m, 1)`` / ``m.triu(1)``: the offset follows the input when qualified
            offset = argument(node, "diagonal", 1 if shape.qualified is not None else 0)
            if offset is None:
                continue
            found = number(self.ctx, offset.value)
            if found is not None and (found.value >= 1 if shape.name.startswith("triu") else found.value <= -1):
                return True
            negated = isinstance(offset.value, cst.UnaryOperation) and isinstance(offset.value.operator, cst.Minus)
            if found is None and negated and shape.name.startswith("tril"):
                return True  # ``tril(-window)``: a window size is positive
        return False

    def _clamps_to_minimum(self) -> bool:
        """``torch.max(x, finfo.min)`` / ``torch.clamp(x, min=finfo.min)`` / ``x.clamp(min=...)``
        somewhere in the file (HF's OPT/LLaMA clamp right after adding the mask)."""
        if getattr(self, "_clamp", None) is None:
            self._clamp = False
            for node in walk(self.ctx.module, into_definitions=True):
                if not isinstance(node, cst.Call):
                    continue
                shape = call_shape(self.ctx, node)
                if shape is None or shape.name not in ("max", "maximum", "clamp", "clamp_", "clip"):
                    continue
                bounds = [argument(node, "min", 1 if shape.qualified else 0)]
                if shape.name in ("max", "maximum"):
                    bounds = [argument(node, "other", 1 if shape.qualified else 0)]
                if any(bound is not None and saturated_scalar(self.ctx, bound.value) for bound in bounds):
                    self._clamp = True
                    break
        return self._clamp


def _infinite(fill: str) -> bool:
    """A fill written as -inf (``float("-inf")``, ``-math.inf``), not finfo.min's finite minimum."""
    return "inf" in fill.replace("finfo", "")

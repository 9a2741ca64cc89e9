"""A call's result dtype from torch's generated semantics (dtype_lint/facts/semantics.py).

The interpreter asks here for a ``torch.*`` / ``torch.nn.functional.*`` function, a Tensor
method or a ``torch.nn`` module call whose result no special case of its own decides (casts,
factories that read literals, containers). The answer is the union of the data's output dtype
over every combination of the operands' possible dtypes; None when the data does not know the
op or a first operand's dtype is unknown: the result is then unknown, never float32.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from typing import TYPE_CHECKING, Callable

import libcst as cst

from dtype_lint.facts import semantics
from dtype_lint.facts.flow.values import DTYPES, INT, TENSOR, TUPLE, Value

if TYPE_CHECKING:
    from dtype_lint.facts.names import ImportTable

_INTEGER = re.compile(r"^u?int\d+$")
_MAX_COMBINATIONS = 64
# Names that stand for a Python float (``float("-inf")`` is a call, ``math.inf`` an attribute).
_FLOAT_CONSTANTS = frozenset({"math.inf", "math.pi", "math.e", "math.nan", "torch.inf", "torch.pi", "torch.e",
                              "torch.nan", "numpy.inf", "numpy.pi", "numpy.e", "numpy.nan"})


# The flow has no complex dtypes: a complex tensor counts as the float dtype of its parts, whose
# precision and kernel gaps it shares (``rfft2`` of a float16 tensor is complex32: float16 here).
_COMPLEX_PARTS = {"complex32": "fp16", "complex64": "fp32", "complex128": "fp64"}


def lattice(code: str | None) -> str | None:
    """The flow's dtype for a data dtype: ``int32`` is an integer, ``complex32`` float16, a
    float8 type unknown."""
    if code in DTYPES:
        return code
    if code in _COMPLEX_PARTS:
        return _COMPLEX_PARTS[code]
    if code is not None and _INTEGER.match(code):
        return INT
    return None


def data_for(ctx) -> semantics.Semantics | None:
    """The data for the file's ``target-torch`` (None when no file is installed)."""
    target = getattr(getattr(ctx, "settings", None), "target_torch", None)
    try:
        return semantics.load(target)
    except (FileNotFoundError, ValueError):
        return None


def scalar_kind(node: cst.BaseExpression, names: "ImportTable") -> str | None:
    """The Python scalar an expression is (``0.5``, ``-1e9``, ``float("-inf")``, ``math.inf``):
    ``semantics.SCALAR_*``, or None."""
    if isinstance(node, cst.UnaryOperation):
        return scalar_kind(node.expression, names)
    if isinstance(node, cst.Integer):
        return semantics.SCALAR_INT
    if isinstance(node, cst.Float):
        return semantics.SCALAR_FLOAT
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return semantics.SCALAR_BOOL
    if isinstance(node, cst.BinaryOperation):
        left, right = scalar_kind(node.left, names), scalar_kind(node.right, names)
        if left and right:
            if isinstance(node.operator, cst.Divide) or semantics.SCALAR_FLOAT in (left, right):
                return semantics.SCALAR_FLOAT
            return semantics.SCALAR_INT
        return None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("float", "int"):
        if not names.qualified_names(node.func):  # the builtin, not a local ``float``
            return semantics.SCALAR_FLOAT if node.func.value == "float" else semantics.SCALAR_INT
    if isinstance(node, (cst.Attribute, cst.Name)) and names.matches(node, *_FLOAT_CONSTANTS):
        return semantics.SCALAR_FLOAT
    return None


@dataclasses.dataclass
class Operands:
    """What the call hands the op: per operand the dtypes it may have (a scalar token for a
    Python number), the values they came from (for origins), and whether one is unknown."""

    choices: list[tuple] = dataclasses.field(default_factory=list)
    values: list[Value] = dataclasses.field(default_factory=list)
    partial: bool = False
    unknown_first: bool = False

    def add_value(self, value: Value | None, first: bool) -> None:
        if value is None or value.kind not in (TENSOR, TUPLE) or (value.kind == TENSOR and not value.dtypes):
            self.partial = True
            self.unknown_first = self.unknown_first or first
            return
        if value.kind == TUPLE:  # ``torch.cat([a, b])``: each item is an operand
            if not value.items:
                self.partial = True
                self.unknown_first = self.unknown_first or first
                return
            for item in value.items:
                self.add_value(item, first)
            return
        self.choices.append(tuple(sorted(value.dtypes)))
        self.values.append(value)
        self.partial = self.partial or value.partial

    def add_scalar(self, token: str) -> None:
        self.choices.append((token,))


# Boolean selectors torch's stubs type as plain Tensors: a ``condition``/``mask`` chooses entries
# and never takes part in the result's dtype (``torch.where(mask, half, -1e30)`` is float16
# whatever the mask is). Positions as in ``operand_positions`` (after a method's receiver).
SELECTOR_POSITIONS = {
    "torch.where": 0, "Tensor.where": 0, "torch.masked_fill": 1, "Tensor.masked_fill": 0,
    "Tensor.masked_fill_": 0, "Tensor.masked_scatter": 0, "Tensor.masked_scatter_": 0,
    "torch.masked_select": 1, "Tensor.masked_select": 0,
}
SELECTOR_KEYWORDS = frozenset({"condition", "mask"})


def _names_a_device(expr: cst.BaseExpression) -> bool:
    """``device``, ``x.device``, ``self.device``, ``accelerator.device``: by the convention of
    torch (``Tensor.device``), transformers (``model.device``) and accelerate, a torch.device."""
    name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else None
    return name == "device"


def gather(data: semantics.Semantics, name: str, call: cst.Call, value_of: Callable, names: "ImportTable",
           receiver: Value | None = None) -> Operands:
    """The operands of ``call`` for ``name``: the receiver, then the arguments torch's stubs
    call operands (``add``'s ``other``, ``where``'s three; not ``roll``'s ``shifts``), or,
    without stubs, the tensor-valued arguments."""
    found = Operands()
    if receiver is not None:
        found.add_value(receiver, first=True)
    recorded = data.operand_positions(name)
    index = 0
    for arg in call.args:
        if arg.star:
            found.partial = True
            continue
        if arg.keyword is None:
            position, index = index, index + 1
            is_operand = (recorded is None or position in recorded[0]) and SELECTOR_POSITIONS.get(name) != position
        else:
            is_operand = (recorded is None or arg.keyword.value in recorded[1]) and (
                name not in SELECTOR_POSITIONS or arg.keyword.value not in SELECTOR_KEYWORDS)
        if not is_operand:
            continue
        if isinstance(arg.value, cst.Name) and arg.value.value == "None":
            continue  # ``bias=None``
        if _names_a_device(arg.value):
            continue  # ``x.to(other.device)``: a torch.device, never an operand
        token = scalar_kind(arg.value, names)
        if token is not None:
            found.add_scalar(token)
            continue
        value = value_of(arg.value)
        if recorded is None and (value is None or value.kind not in (TENSOR, TUPLE)):
            continue  # without stubs only tensors are operands
        found.add_value(value, first=receiver is None and not found.choices and not found.unknown_first)
    return found


def result_dtypes(data: semantics.Semantics, name: str, operands: Operands, dtype_argument,
                  default_float: str, module: frozenset | None = None) -> tuple[frozenset, bool] | None:
    """(dtypes, partial) of the call's result, or None when unknown.

    ``dtype_argument``: None when the call passes no ``dtype=``, else the frozenset of dtypes it
    may name (empty: unknown). ``module``: a torch.nn module's parameter dtypes."""
    entry = data.entry(name)
    if entry is None or entry.get("out") is None or operands.unknown_first:
        return None
    kwargs_choices: list[dict | None] = [None]
    if dtype_argument is not None and entry.get("kw") == "dtype":
        if not dtype_argument:
            return None
        kwargs_choices = [{"dtype": d} for d in sorted(dtype_argument)]
    module_choices = sorted(module) if module else [None]
    combinations = list(itertools.islice(itertools.product(*operands.choices), _MAX_COMBINATIONS + 1))
    if len(combinations) > _MAX_COMBINATIONS:
        return None
    found: set[str] = set()
    partial = operands.partial
    for combination in combinations:
        for kwargs in kwargs_choices:
            for module_dtype in module_choices:
                out = lattice(data.output_dtype(name, list(combination), kwargs, module=module_dtype,
                                                default_float=default_float))
                if out is None:
                    partial = True
                else:
                    found.add(out)
    if not found:
        return None
    return frozenset(found), partial


def raises_for(data: semantics.Semantics, name: str, operands: Operands, module: frozenset | None = None) -> str | None:
    """torch's error when every combination of known operand dtypes raises (a half input to
    float32 weights), else None."""
    if not operands.choices:
        return None
    messages = set()
    for combination in itertools.islice(itertools.product(*operands.choices), _MAX_COMBINATIONS):
        for module_dtype in (sorted(module) if module else [None]):
            message = data.raises(name, list(combination), module=module_dtype)
            if message is None:
                return None
            messages.add(message)
    return sorted(messages)[0] if messages else None

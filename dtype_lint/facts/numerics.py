"""Shared questions of the numerics rules (DTL501-DTL508); this module defines no rule.

Two kinds of knowledge live here:

* **what a value is**, syntactically: the number a literal or a constant name stands for
  (``-1e9``, ``float(2**30)``, ``NEG_INF``, ``self.eps`` set from ``eps=1e-8`` in ``__init__``),
  and whether an expression is a *saturated* additive mask (filled with ``torch.finfo(..).min``
  or ``-inf``). These are facts about values, not dtypes.
* **what dtype a tensor has**, which is asked of the shared dtype flow (``ctx.flow``, built in
  ``dtype_lint.facts.dtypes``) through :func:`dtype_at`; the numerics rules never infer a dtype
  themselves. Unknown stays unknown, and the rules stay silent on it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.devices import argparse_default
from dtype_lint.facts.training import DEFINITIONS, walk
from dtype_lint.findings import Confidence

if TYPE_CHECKING:
    from dtype_lint.context import FileContext
    from dtype_lint.facts.dtypes import Value

FP16, BF16, FP32 = "fp16", "bf16", "fp32"  # the flow's spelling (dtype_lint.facts.flow.values)
FP16_MAX = 65504.0
# fp16's smallest subnormal is 2**-24 (5.96e-8): anything below rounds to it or to zero.
FP16_TINIEST = 6e-8

# Calls that keep a tensor's values (and so its "saturated mask" nature): shape and device ops.
SHAPE_PRESERVING = frozenset(
    {
        "to", "view", "reshape", "expand", "expand_as", "unsqueeze", "squeeze", "transpose",
        "permute", "contiguous", "clone", "repeat", "repeat_interleave", "type_as", "half",
        "bfloat16", "float", "cuda", "cpu", "triu", "tril", "detach", "flatten", "narrow",
    }
)
TORCH_SHAPE_FUNCS = frozenset({"triu", "tril", "unsqueeze", "reshape", "broadcast_to", "transpose"})


# -- the dtype flow, asked ----------------------------------------------------------------------
def confidence_for(value: "Value | None", risky: tuple[str, ...]) -> Confidence | None:
    """HIGH when ``value`` is one of ``risky`` on every path, MEDIUM when some path (a union, or
    a path left unknown) gives a risky dtype, None when no risky dtype is possible or nothing is
    known."""
    if value is None or not value.dtypes:
        return None
    if value.only(*risky):
        return Confidence.HIGH
    if value.may_be(*risky):
        return Confidence.MEDIUM
    return None


def explain(value: "Value", dtype: str | None = None) -> str:
    """``float16 since line 12 (`model.half()`)`` / ``float16 or float32 since ...``."""
    since = value.since(dtype) if dtype else value.since()
    text = value.describe()
    if value.partial:
        text += " where known"
    if not since and value.autocast:
        from dtype_lint.facts.flow.values import LONG_NAMES

        since = f"(an output of a {LONG_NAMES.get(value.autocast, value.autocast)} autocast region)"
    return f"{text} {since}".strip()


def autocast_enabled_at(ctx: "FileContext", node: cst.CSTNode) -> bool:
    """True when ``node`` sits inside an autocast region that is (or may be) enabled."""
    return ctx.flow.autocast_at(node) is not None


# -- calls ----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CallShape:
    """``x.masked_fill(m, v)`` -> name "masked_fill", receiver ``x``; ``torch.exp(x)`` -> "exp",
    receiver None, qualified "torch.exp"."""

    name: str
    receiver: cst.BaseExpression | None
    qualified: str | None


def call_shape(ctx: "FileContext", call: cst.Call) -> CallShape | None:
    """The call's shape, read once per call (six rules ask it of every call of the file)."""
    shapes = ctx.__dict__.get("_call_shapes")
    if shapes is None:
        shapes = ctx.__dict__["_call_shapes"] = {}
    known = shapes.get(id(call))
    if known is not None and known[0] is call:  # (the call is held here: its id is not reused)
        return known[1]
    shape = _call_shape(ctx, call)
    shapes[id(call)] = (call, shape)
    return shape


def _call_shape(ctx: "FileContext", call: cst.Call) -> CallShape | None:
    func = call.func
    qualified = next(iter(ctx.names.qualified_names(func)), None)
    if qualified is not None and (qualified.startswith("torch.") or qualified.startswith("math.")):
        return CallShape(qualified.rsplit(".", 1)[-1], None, qualified)
    if isinstance(func, cst.Attribute):
        receiver_names = ctx.names.qualified_names(func.value)
        if receiver_names and any(n == "torch" or n.startswith("torch.") or n in ("numpy", "math") for n in receiver_names):
            return CallShape(func.attr.value, None, f"{receiver_names[0]}.{func.attr.value}")
        return CallShape(func.attr.value, func.value, None)
    if isinstance(func, cst.Name):
        return CallShape(func.value, None, qualified)
    return None


def argument(call: cst.Call, keyword: str | None, position: int | None) -> cst.Arg | None:
    for index, arg in enumerate(call.args):
        if keyword is not None and arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    if position is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if len(positional) > position:
            return positional[position]
    return None


def has_keyword(call: cst.Call, keyword: str) -> bool:
    return any(arg.keyword is not None and arg.keyword.value == keyword for arg in call.args)


def is_simple_reference(expr: cst.BaseExpression) -> bool:
    """A name or attribute chain (``scores``, ``self.inv_freq``): cheap and safe to repeat in a fix."""
    return dotted_name(expr) is not None


def torch_spelling(ctx: "FileContext") -> str | None:
    spellings = [s for s in ctx.names.local_names_for("torch") if "." not in s]
    return spellings[0] if spellings else None


# -- scopes and bindings -------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Binding:
    name: str
    value: cst.BaseExpression
    end: int  # where the assignment ends, as its exit number in a source-order walk (ctx.source_order)
    node: cst.CSTNode


class _Scope:
    """Assignments to plain names in one function (or the module), in source order."""

    def __init__(self, ctx: "FileContext", owner: cst.CSTNode) -> None:
        self.owner = owner
        self.bindings: dict[str, list[Binding]] = {}
        self.defaults: dict[str, cst.BaseExpression] = {}
        if isinstance(owner, cst.FunctionDef):
            params = owner.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                if param.default is not None:
                    self.defaults[param.name.value] = param.default
            body = owner.body.body if isinstance(owner.body, cst.IndentedBlock) else ()
        else:
            body = owner.body
        for statement in body:
            if isinstance(statement, DEFINITIONS):
                continue  # a nested def or class binds in its own scope
            for node in walk(statement):
                kind = type(node)  # (exact types: libcst's ABCs make isinstance slow in this loop)
                if kind is cst.Assign:
                    for target in node.targets:
                        if type(target.target) is cst.Name:
                            self._add(ctx, target.target.value, node.value, node)
                elif kind is cst.AnnAssign and type(node.target) is cst.Name and node.value is not None:
                    self._add(ctx, node.target.value, node.value, node)
        for found in self.bindings.values():
            found.sort(key=lambda binding: binding.end)

    def _add(self, ctx: "FileContext", name: str, value: cst.BaseExpression, node: cst.CSTNode) -> None:
        self.bindings.setdefault(name, []).append(Binding(name, value, ctx.source_order(node)[1], node))

    def before(self, name: str, point: int) -> list[Binding]:
        """Assignments that end before ``point`` (an enter number; so not the one the use sits in)."""
        return [b for b in self.bindings.get(name, ()) if b.end < point]

    def all(self, name: str) -> list[Binding]:
        return list(self.bindings.get(name, ()))


class NumericsFacts:
    """Per-file caches for the syntactic value questions of the numerics rules."""

    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx
        self._scopes: dict[int, _Scope] = {}
        self._class_attrs: dict[int, dict[str, list[tuple[cst.BaseExpression, cst.CSTNode]]]] = {}
        self._functions: dict[str, cst.FunctionDef] | None = None
        self._calls: dict[str, list[cst.Call]] | None = None

    # scopes
    def scope_of(self, node: cst.CSTNode) -> _Scope:
        owner = self.ctx.enclosing(node, cst.FunctionDef) or self.ctx.module
        return self.scope_for(owner)

    def scope_for(self, owner: cst.CSTNode) -> _Scope:
        key = id(owner)
        if key not in self._scopes:
            self._scopes[key] = _Scope(self.ctx, owner)
        return self._scopes[key]

    def module_scope(self) -> _Scope:
        return self.scope_for(self.ctx.module)

    def reaching(self, name: cst.Name) -> list[tuple[cst.BaseExpression, cst.CSTNode]]:
        """Expressions ``name`` may hold where it is used: the last assignment that ends before
        it in its function, else the parameter default, else the single module-level
        assignment. A value fact, not a dtype: branches are not joined here (the dtype flow does
        that); callers treat what they get as a hint about the value written."""
        scope = self.scope_of(name)
        earlier = scope.before(name.value, self.ctx.source_order(name)[0])
        if earlier:
            # Latest first, back to the first one that surely ran (its block encloses the use);
            # assignments in branches before it may each be the one that reaches.
            found = []
            for binding in reversed(earlier):
                found.append((binding.value, scope.owner))
                if self._dominates(binding.node, name):
                    break
            return found
        if name.value in scope.defaults:
            return [(scope.defaults[name.value], scope.owner)]
        if scope.owner is not self.ctx.module:
            module_bindings = self.module_scope().all(name.value)
            if len(module_bindings) == 1:
                return [(module_bindings[0].value, self.ctx.module)]
        return []

    def passed(self, name: cst.Name) -> list[cst.BaseExpression]:
        """What a parameter of a function of this file holds: the arguments its calls in this file
        pass for it (``attention(q, k, v, make_mask(pad))`` for ``attention_mask``), when ``name``
        is a parameter of a plain function (not a method) that nothing in the function rebinds."""
        function = self.ctx.enclosing(name, cst.FunctionDef)
        if function is None or self.ctx.enclosing(function, cst.ClassDef) is not None:
            return []
        if self.scope_for(function).all(name.value):
            return []
        params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
        if name.value not in params and name.value not in {p.name.value for p in function.params.kwonly_params}:
            return []
        index = params.index(name.value) if name.value in params else None
        found = []
        for call in self._constructions(function.name.value):
            arg = argument(call, name.value, index)
            if arg is not None:
                found.append(arg.value)
        return found

    def _dominates(self, assignment: cst.CSTNode, use: cst.CSTNode) -> bool:
        statement = self.ctx.parent(assignment)
        block = self.ctx.parent(statement) if statement is not None else None
        if block is None:
            return True
        current = self.ctx.parent(use)
        while current is not None:
            if current is block:
                return True
            current = self.ctx.parent(current)
        return False

    def class_attribute(self, node: cst.Attribute) -> list[cst.BaseExpression]:
        """``self.eps`` -> the expressions assigned to it in the class (``__init__`` params
        resolved to their defaults; class-level ``eps = 1e-8``)."""
        if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
            return []
        klass = self.ctx.enclosing(node, cst.ClassDef)
        if klass is None:
            return []
        table = self._class_table(klass)
        return [value for value, _ in table.get(node.attr.value, ())]

    def _class_table(self, klass: cst.ClassDef) -> dict[str, list[tuple[cst.BaseExpression, cst.CSTNode]]]:
        key = id(klass)
        if key in self._class_attrs:
            return self._class_attrs[key]
        table: dict[str, list[tuple[cst.BaseExpression, cst.CSTNode]]] = {}
        for statement in klass.body.body if isinstance(klass.body, cst.IndentedBlock) else ():
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                        table.setdefault(small.targets[0].target.value, []).append((small.value, klass))
            elif isinstance(statement, cst.FunctionDef):
                scope = self.scope_for(statement)
                for target, value in _self_assignments(statement):
                    if isinstance(value, cst.Name) and value.value in scope.defaults and not scope.all(value.value):
                        for passed in self._constructor_values(klass, statement, value.value):
                            table.setdefault(target, []).append((passed, statement))
                    else:
                        table.setdefault(target, []).append((value, statement))
        self._class_attrs[key] = table
        return table

    def _constructor_values(self, klass: cst.ClassDef, init: cst.FunctionDef, param: str) -> list[cst.BaseExpression]:
        """What ``param`` of ``__init__`` is at the class's constructions in this file: the
        values passed, plus the default when some construction (or none at all) omits it."""
        default = self.scope_for(init).defaults[param]
        if init.name.value != "__init__":
            return [default]
        names = [p.name.value for p in (*init.params.posonly_params, *init.params.params)]
        index = names.index(param) - 1 if param in names else None  # minus ``self``
        values: list[cst.BaseExpression] = []
        omitted = False
        for call in self._constructions(klass.name.value):
            passed = argument(call, param, index)
            if passed is None:
                omitted = True
            else:
                values.append(passed.value)
        if omitted or not values:
            values.insert(0, default)
        return values

    def _constructions(self, class_name: str) -> list[cst.Call]:
        if self._calls is None:
            calls: dict[str, list[cst.Call]] = {}
            for node in self.ctx.all_nodes:
                if type(node) is cst.Call and isinstance(node.func, cst.Name):
                    calls.setdefault(node.func.value, []).append(node)
            self._calls = calls
        return self._calls.get(class_name, [])

    # functions of this file, by name (for helpers such as ``_make_causal_mask``)
    def function(self, name: str) -> cst.FunctionDef | None:
        if self._functions is None:
            found: dict[str, list[cst.FunctionDef]] = {}
            for node in self.ctx.all_nodes:
                if isinstance(node, cst.FunctionDef):
                    found.setdefault(node.name.value, []).append(node)
            self._functions = {k: v[0] for k, v in found.items() if len(v) == 1}
        return self._functions.get(name)


def _self_assignments(function: cst.FunctionDef) -> Iterator[tuple[str, cst.BaseExpression]]:
    for node in walk(function):  # not into nested defs: their ``self`` is another object
        if isinstance(node, cst.Assign):
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                    yield t.attr.value, node.value


def facts(ctx: "FileContext") -> NumericsFacts:
    # Kept on the context itself: a WeakKeyDictionary keyed by ctx leaked every file's tree,
    # since the value (NumericsFacts) holds ctx strongly and so the key never dies.
    found = ctx.__dict__.get("_numerics_facts")
    if found is None:
        found = NumericsFacts(ctx)
        ctx.__dict__["_numerics_facts"] = found
    return found


# -- numbers ----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Number:
    value: float
    node: cst.CSTNode  # where the number is written (the literal, or the constant's definition)
    literal: bool  # written at the use site (a fix may replace it)

    def where(self, ctx: "FileContext") -> str:
        return f"line {ctx.position(self.node).start.line}"


INF_NAMES = ("math.inf", "torch.inf", "numpy.inf", "numpy.Inf", "numpy.PINF")
NAN_NAMES = ("math.nan", "torch.nan", "numpy.nan", "numpy.NaN")


def number(ctx: "FileContext", expr: cst.BaseExpression, depth: int = 0) -> Number | None:
    """The number ``expr`` stands for, following constant names a few steps; else None."""
    value = _evaluate(ctx, expr, depth)
    if value is None:
        return None
    literal = _is_literal_expression(expr)
    return Number(value[0], value[1] if not literal else expr, literal)


def _is_literal_expression(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _is_literal_expression(expr.expression)
    if isinstance(expr, cst.BinaryOperation):
        return _is_literal_expression(expr.left) and _is_literal_expression(expr.right)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("float", "int"):
        return len(expr.args) == 1 and (
            _is_literal_expression(expr.args[0].value) or isinstance(expr.args[0].value, cst.SimpleString)
        )
    return False


def _evaluate(ctx: "FileContext", expr: cst.BaseExpression, depth: int) -> tuple[float, cst.CSTNode] | None:
    if depth > 6:
        return None
    if isinstance(expr, (cst.Integer, cst.Float)):
        try:
            return float(expr.evaluated_value), expr
        except (OverflowError, ValueError):
            return None
    if isinstance(expr, cst.UnaryOperation):
        inner = _evaluate(ctx, expr.expression, depth + 1)
        if inner is None:
            return None
        if isinstance(expr.operator, cst.Minus):
            return -inner[0], inner[1]
        if isinstance(expr.operator, cst.Plus):
            return inner
        return None
    if isinstance(expr, cst.BinaryOperation):
        left = _evaluate(ctx, expr.left, depth + 1)
        right = _evaluate(ctx, expr.right, depth + 1)
        if left is None or right is None:
            return None
        try:
            result = _binary(expr.operator, left[0], right[0])
        except (OverflowError, ZeroDivisionError, ValueError):
            return None
        return (result, expr) if result is not None else None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("float", "int"):
        if len(expr.args) != 1 or expr.args[0].keyword is not None:
            return None
        inner_expr = expr.args[0].value
        if isinstance(inner_expr, cst.SimpleString):
            text = inner_expr.evaluated_value
            try:
                return float(text), expr
            except (TypeError, ValueError):
                return None
        inner = _evaluate(ctx, inner_expr, depth + 1)
        return (inner[0], expr) if inner is not None else None
    if isinstance(expr, (cst.Name, cst.Attribute)):
        if ctx.names.matches(expr, *INF_NAMES):
            return math.inf, expr
        if ctx.names.matches(expr, *NAN_NAMES):
            return math.nan, expr
        candidates: list[cst.BaseExpression]
        if isinstance(expr, cst.Name):
            candidates = [value for value, _ in facts(ctx).reaching(expr)]
        else:
            candidates = facts(ctx).class_attribute(expr)
            if not candidates and isinstance(expr.value, cst.Name) and expr.value.value != "self":
                # ``args.adam_epsilon``: the argparse default the program runs with
                default = argparse_default(ctx, expr.attr.value)
                candidates = [default] if default is not None else []
        values = [_evaluate(ctx, c, depth + 1) for c in candidates]
        if values and all(v is not None for v in values):
            numbers = {v[0] for v in values if v is not None}
            if len(numbers) == 1:
                return values[0]
        return None
    return None


def _binary(operator: cst.BaseBinaryOp, a: float, b: float) -> float | None:
    if isinstance(operator, cst.Add):
        return a + b
    if isinstance(operator, cst.Subtract):
        return a - b
    if isinstance(operator, cst.Multiply):
        return a * b
    if isinstance(operator, cst.Divide):
        return a / b
    if isinstance(operator, cst.Power):
        if abs(b) > 4096:
            return None
        return float(a) ** b
    return None


def overflows_fp16(value: float) -> bool:
    return math.isfinite(value) and abs(value) > FP16_MAX


def vanishes_in_fp16(value: float) -> bool:
    return 0 < value < FP16_TINIEST


def format_number(value: float) -> str:
    if value == int(value) and abs(value) < 1e6:
        return str(int(value))
    return f"{value:g}"

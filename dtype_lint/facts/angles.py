"""Angles: products of positions and frequencies whose sine or cosine a function takes.

Rotary and sinusoidal embeddings compute ``angle = position * frequency`` (``torch.outer``,
``@``, ``einsum``, ``*``) and then ``angle.cos()`` / ``angle.sin()`` / ``torch.polar(1, angle)``.
The angle reaches thousands of radians; rounded to float16 or bfloat16 its spacing is 0.5 to
32 rad, so the phase is lost even where ``cos`` itself then runs in float32. Which consumers
amplify their argument's rounding so, and from what magnitude, is torch data
(``rounding`` in the semantics file, facts/semantics.py ``rounding_scale``); which products
autocast runs in the low dtype is too (``amp``). This module answers the syntactic part, in one
function at a time:

* ``position_source(ctx, expr)``: the positions or growing frequencies an operand is built
  from, a ``torch.arange``/``linspace`` reached through names, arithmetic, shape ops and casts
  (not through ``exp``, a reciprocal or a negative power: inverse frequencies are at most 1, the
  angle's size is then the other operand's, unknown), or a name that says positions
  (``position_ids``, ``positions``, ``pos``);
* ``angle_consumer(ctx, node, data)``: the consumer (``cos``, ``sin``, ``polar``...) that the
  value of ``node`` reaches in its function, through assignments and calls around it;
* ``autocast_guarded(ctx, node)``: a ``with ...autocast...`` or an autocast/``custom_fwd``
  decorator around ``node`` (whatever its arguments: a region the analysis cannot read may be
  the ``enabled=False`` that keeps the angle in float32);
* ``runs_mixed_precision(ctx)``: the file shows its modules run under autocast: it names
  ``autocast``/``custom_fwd``/``GradScaler`` in code, or defines a diffusers ``ModelMixin`` or
  transformers ``PreTrainedModel`` subclass (models those libraries' trainers and pipelines run
  under autocast). A plain module in a file that shows neither may never meet autocast.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.numerics import facts

if TYPE_CHECKING:
    from dtype_lint.context import FileContext

# Names that say token positions: integer-valued, up to a sequence length. Not ``timesteps``:
# a flow-matching time lies in [0, 1] (a diffusion step's arange-made frequencies still count).
POSITION_NAME = re.compile(r"^(position_ids|pos_ids|positions?|pos|seq_idx|seq_ids|position_index|pos_seq)$",
                           re.IGNORECASE)
SOURCES = frozenset({"torch.arange", "torch.linspace"})
# Calls whose result carries their receiver's or first argument's values (shape, cast, arithmetic).
CARRIERS = frozenset({
    "float", "double", "half", "bfloat16", "to", "type", "type_as", "expand", "expand_as", "view", "reshape",
    "unsqueeze", "squeeze", "repeat", "repeat_interleave", "contiguous", "flatten", "transpose", "permute", "t",
    "pow", "mul", "outer", "ger", "einsum", "matmul", "cat", "stack", "clone", "detach", "cuda",
})
TAINT_DEPTH = 12
# Ops that take an angle (the role); whether rounding the angle to a low dtype hurts them, and
# from what magnitude, is the semantics data's ``rounding`` fact. ``exp``/``floor``/``pow`` also
# amplify their argument's rounding, but of log-scale frequencies or indices, not of angles.
ANGLE_OPS = frozenset({"sin", "cos", "tan", "sin_", "cos_", "polar"})


def _callee(ctx: "FileContext", call: cst.Call) -> str | None:
    return next(iter(ctx.names.qualified_names(call.func)), None)


def position_source(ctx: "FileContext", expr: cst.BaseExpression, depth: int = 0) -> cst.CSTNode | None:
    """The ``arange``/``linspace`` call or position-named node ``expr`` is built from, or None."""
    if depth > TAINT_DEPTH:
        return None
    if isinstance(expr, cst.Name):
        if POSITION_NAME.match(expr.value):
            return expr
        if ctx.enclosing(expr, cst.FunctionDef) is None:
            return None
        reaching = facts(ctx).reaching(expr)
        for value, _ in reaching[:2]:
            found = position_source(ctx, value, depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(expr, cst.Attribute):
        if POSITION_NAME.match(expr.attr.value):
            return expr
        return None  # ``self.inv_freq``: a module's buffer, built elsewhere
    if isinstance(expr, cst.Subscript):
        return position_source(ctx, expr.value, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Divide):
            return position_source(ctx, expr.left, depth + 1)  # ``1.0 / base ** x``: at most 1
        if isinstance(expr.operator, cst.Power) and isinstance(expr.right, cst.UnaryOperation):
            return None  # ``base ** -x``: inverse frequencies, at most 1
        return position_source(ctx, expr.left, depth + 1) or position_source(ctx, expr.right, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return position_source(ctx, expr.expression, depth + 1)
    if isinstance(expr, (cst.Tuple, cst.List)):
        for element in expr.elements:
            found = position_source(ctx, element.value, depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(expr, cst.Call):
        if _callee(ctx, expr) in SOURCES:
            return expr
        func = expr.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if name not in CARRIERS:
            return None
        if isinstance(func, cst.Attribute):
            found = position_source(ctx, func.value, depth + 1)
            if found is not None:
                return found
        for arg in expr.args:
            if arg.keyword is None and not isinstance(arg.value, cst.SimpleString):
                found = position_source(ctx, arg.value, depth + 1)
                if found is not None:
                    return found
    return None


_SHAPES_AND_CASTS = frozenset({
    "float", "double", "half", "bfloat16", "to", "type", "type_as", "expand", "expand_as", "view", "reshape",
    "unsqueeze", "squeeze", "repeat", "contiguous", "flatten", "transpose", "permute", "clone", "detach",
})


def plain_positions(ctx: "FileContext", expr: cst.BaseExpression, depth: int = 0) -> bool:
    """``expr`` is an ``arange``/``linspace`` itself, through names, indexing, shape ops and
    casts only (the positions, not a frequency computed from them)."""
    if depth > TAINT_DEPTH:
        return False
    if isinstance(expr, cst.Name):
        if ctx.enclosing(expr, cst.FunctionDef) is None:
            return False
        reaching = facts(ctx).reaching(expr)
        return len(reaching) == 1 and plain_positions(ctx, reaching[0][0], depth + 1)
    if isinstance(expr, cst.Subscript):
        return plain_positions(ctx, expr.value, depth + 1)
    if isinstance(expr, cst.Call):
        if _callee(ctx, expr) in SOURCES:
            return True
        func = expr.func
        return isinstance(func, cst.Attribute) and func.attr.value in _SHAPES_AND_CASTS and \
            plain_positions(ctx, func.value, depth + 1)
    return False


def _names_in(expr: cst.CSTNode) -> set[str]:
    found: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            found.add(node.value)
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)  # ``x.shape``: x; never the attribute's own name
        else:
            stack.extend(node.children)
    return found


def _targets(statement: cst.CSTNode) -> set[str]:
    names: set[str] = set()
    targets = []
    if isinstance(statement, cst.Assign):
        targets = [t.target for t in statement.targets]
    elif isinstance(statement, (cst.AugAssign, cst.AnnAssign)):
        targets = [statement.target]
    for target in targets:
        stack = [target]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Name):
                names.add(node.value)
            elif isinstance(node, (cst.Tuple, cst.List)):
                stack.extend(e.value for e in node.elements)
    return names


def _small_statements(function: cst.FunctionDef) -> list[cst.BaseSmallStatement]:
    found = []
    stack = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not function.body:
            continue
        if isinstance(node, cst.BaseSmallStatement):
            found.append(node)
            continue
        stack.extend(reversed(node.children))
    return found


def consumer_of(ctx: "FileContext", call: cst.Call) -> tuple[str, list[cst.BaseExpression]] | None:
    """(semantics name, its angle arguments) of a call of a float op: ``torch.cos(a)`` ->
    (``torch.cos``, [a]); ``a.sin()`` -> (``Tensor.sin``, [a]); ``torch.polar(r, a)`` -> [r, a]."""
    qualified = _callee(ctx, call)
    if qualified is not None and qualified.startswith("torch."):
        return qualified, [arg.value for arg in call.args if arg.keyword is None or arg.keyword.value in ("input", "angle")]
    if isinstance(call.func, cst.Attribute) and qualified is None:
        return f"Tensor.{call.func.attr.value}", [call.func.value]
    return None


def angle_consumer(ctx: "FileContext", node: cst.CSTNode, data, dtype: str) -> tuple[cst.Call, str, float] | None:
    """(the call, its op, the rounding scale) of the first op that amplifies its argument's
    rounding to ``dtype`` (torch's data) and takes the value of ``node``, directly or through
    the names assigned from it later in the function; None when there is none."""
    function = ctx.enclosing(node, cst.FunctionDef)
    if function is None:
        return None
    line = ctx.enclosing_statement(node)
    begin = ctx.source_order(line if line is not None else node)[0]
    tainted: set[str] = set()
    for small in _small_statements(function):  # in source order
        if ctx.source_order(small)[0] < begin:
            continue
        if ctx.enclosing_statement(small) is line or _names_in(small) & tainted:
            tainted |= _targets(small)
    for inner in _walk_calls(function):
        found = consumer_of(ctx, inner)
        if found is None:
            continue
        op, arguments = found
        if op.rsplit(".", 1)[-1] not in ANGLE_OPS:
            continue
        scale = data.rounding_scale(op, dtype)
        if scale is None:
            continue
        for argument in arguments:
            if _contains(argument, node) or (ctx.source_order(inner)[0] > begin and _names_in(argument) & tainted):
                return inner, op, scale
    return None


def _walk_calls(function: cst.FunctionDef) -> list[cst.Call]:
    found = []
    stack = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.Call):
            found.append(node)
        stack.extend(reversed(node.children))
    return found


def _contains(expr: cst.CSTNode, node: cst.CSTNode) -> bool:
    stack = [expr]
    while stack:
        current = stack.pop()
        if current is node:
            return True
        stack.extend(current.children)
    return False


_AUTOCAST_WORDS = re.compile(r"autocast|custom_fwd|amp\.")


def autocast_guarded(ctx: "FileContext", node: cst.CSTNode) -> cst.CSTNode | None:
    """The nearest ``with`` item whose context mentions autocast, or decorator of an enclosing
    function that names autocast or ``custom_fwd``, around ``node``; None when there is none."""
    current = ctx.parent(node)
    while current is not None:
        if isinstance(current, cst.With):
            for item in current.items:
                if _AUTOCAST_WORDS.search(ctx.code_for(item.item)):
                    return item.item
        if isinstance(current, cst.FunctionDef):
            for decorator in current.decorators:
                if _AUTOCAST_WORDS.search(ctx.code_for(decorator.decorator)):
                    return decorator.decorator
        current = ctx.parent(current)
    return None


MIXED_PRECISION_NAMES = frozenset({"autocast", "custom_fwd", "custom_bwd", "GradScaler"})
LIBRARY_MODEL_BASE = re.compile(r"(^|\.)(ModelMixin|\w*PreTrainedModel)$")


def runs_mixed_precision(ctx: "FileContext") -> bool:
    """See the module docstring; read once per file."""
    cached = ctx.__dict__.get("_runs_mixed_precision")
    if cached is None:
        cached = ctx.__dict__["_runs_mixed_precision"] = _shows_mixed_precision(ctx)
    return cached


def _shows_mixed_precision(ctx: "FileContext") -> bool:
    for node in ctx.all_nodes:
        kind = type(node)
        if kind is cst.Name and node.value in MIXED_PRECISION_NAMES:
            return True
        if kind is cst.Attribute and node.attr.value in MIXED_PRECISION_NAMES:
            return True
        if kind is cst.ClassDef and any(LIBRARY_MODEL_BASE.search(dotted_name(base.value) or "") for base in node.bases):
            return True
    return False

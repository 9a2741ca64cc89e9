"""Queries about a tensor whose dtype the function follows (facts/flow/lowp_evidence.py, ``follows``).

A function that makes or casts a tensor in ``x``'s dtype (``dtype=x.dtype``, ``y.to(x.dtype)``)
is written for the dtypes its callers give ``x``, float16/bfloat16 among them. Where such an
``x`` (or a value computed from it) meets a float32 the function fixes itself (a factory without
``dtype=``, a ``.float()`` result), the two disagree exactly when a caller gives a low dtype:
the rules that report it (DTL510, DTL107) state that condition, and ask here.
"""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.flow.lowp_evidence import ContractOrigin, EvidenceOrigin, FollowsOrigin
from dtype_lint.facts.flow.values import FP32, FP64, LOW, TENSOR, Value

# Calls whose result has the dtype they are given: a combined result cast afterwards is chosen.
_DTYPE_SETTING_CALLS = frozenset({"to", "type", "half", "float", "bfloat16", "double", "type_as"})


def followed_low(ctx, expr: cst.BaseExpression) -> tuple[Value, EvidenceOrigin] | None:
    """(its value with the evidence, the evidence's origin) when ``expr`` is a tensor of unknown
    dtype that is float16/bfloat16 on a caller's path only by the function's own evidence (a
    followed dtype, a dtype test, a cast back): nothing else tells its dtype."""
    plain = ctx.flow.value_of(expr)
    if plain is not None and plain.dtypes:
        return None  # the flow knows a dtype: the rules that take it decide
    value = ctx.flow.value_of(expr, follows=True)
    if value is None or value.kind != TENSOR or not value.dtypes & LOW or value.may_be(FP64):
        return None
    origins = [origin for dtype, origin in value.origins if dtype in LOW]
    if not origins or not all(isinstance(origin, EvidenceOrigin) for origin in origins):
        return None
    function = ctx.enclosing(expr, cst.FunctionDef)
    if any(ctx.enclosing(origin.node, cst.FunctionDef) is not function for origin in origins):
        return None  # a caller's evidence: its own function, not this one, is written for it
    return value, origins[0]


def fixed_here(ctx, node: cst.CSTNode, value: Value) -> bool:
    """The float32 of ``value`` comes from the function around ``node`` itself (a factory or a
    cast there), not from a module's ``__init__`` (whose parameters move with module casts)."""
    origin = value.origin_of(FP32)
    return origin is not None and ctx.enclosing(origin.node, cst.FunctionDef) is ctx.enclosing(node, cst.FunctionDef)


_DTYPE_OF = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)\.dtype\b")


def condition(origin: EvidenceOrigin) -> str:
    """``when `x` is float16/bfloat16 (the function follows its dtype at line 7: `...`)``."""
    found = _DTYPE_OF.search(origin.text)
    name = getattr(origin, "name", "") or (found.group(1) if found else "")
    name = f"`{name}`" if name else "its input"
    if isinstance(origin, ContractOrigin):
        return f"when {name} is float16/bfloat16 ({origin.why}; line {origin.line})"
    why = "the function follows its dtype" if isinstance(origin, FollowsOrigin) else \
        "the function is written for float16/bfloat16"
    return f"when {name} is float16/bfloat16 ({why}: line {origin.line}, `{origin.text}`)"


def cast_afterwards(ctx, node: cst.CSTNode) -> bool:
    """The result of ``node`` is cast by the code that takes it: an enclosing ``(...).to(d)`` in the
    same statement, an in-place store (``acc += ...``, ``acc[i] = ...``), or a later ``name.to(...)``
    / ``name.half()`` of the name the statement binds."""
    statement = ctx.enclosing_statement(node)
    current, parent = node, ctx.parent(node)
    while parent is not None and parent is not statement:
        if isinstance(parent, cst.Attribute) and parent.value is current and parent.attr.value in _DTYPE_SETTING_CALLS:
            return True
        if isinstance(parent, cst.AugAssign) and parent.value is current:
            return True  # ``acc += x * w``: written into ``acc``, in its dtype
        if isinstance(parent, cst.Assign) and parent.value is current and any(
                isinstance(t.target, (cst.Subscript, cst.Attribute)) for t in parent.targets):
            return True  # ``acc[i] = x * w`` / ``w.data = ...``: stored in the existing tensor's dtype
        current, parent = parent, ctx.parent(parent)
    names = _bound_names(statement)
    if not names:
        return False
    function = ctx.enclosing(node, cst.FunctionDef)
    if function is None:
        return False
    after = ctx.source_order(statement)
    # the first later read of each bound name decides: a cast (``name.to(...)``), or a use of the
    # float32 result before any cast (``vae.encode(name)`` then ``name.float()``: too late)
    first: dict[str, tuple] = {}
    for candidate in ctx.all_nodes:
        if not (isinstance(candidate, cst.Name) and candidate.value in names):
            continue
        order = ctx.source_order(candidate)
        if order <= after or ctx.enclosing(candidate, cst.FunctionDef) is not function:
            continue
        parent = ctx.parent(candidate)
        if isinstance(parent, cst.AssignTarget) or isinstance(parent, cst.Attribute) and parent.attr is candidate:
            continue
        if candidate.value not in first or order < first[candidate.value][0]:
            first[candidate.value] = (order, candidate)
    for _, candidate in first.values():
        parent = ctx.parent(candidate)
        if isinstance(parent, cst.Attribute) and parent.value is candidate and parent.attr.value in _DTYPE_SETTING_CALLS:
            return True
    return False


def _bound_names(statement: cst.CSTNode | None) -> set[str]:
    if not isinstance(statement, cst.SimpleStatementLine):
        return set()
    names = set()
    for small in statement.body:
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
            [small.target] if isinstance(small, (cst.AugAssign, cst.AnnAssign)) else []
        names.update(t.value for t in targets if isinstance(t, cst.Name))
    return names

"""What a flag expression is on the runs where another flag holds.

A script often derives several settings from the same command-line flags::

    amp_dtype = torch.bfloat16 if args.bf16 else torch.float16
    use_amp = args.fp16 or args.bf16
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)

The dtype flow joins both sides of ``amp_dtype`` and does not know ``use_amp``; here the
expressions are read as written: ``bf16_condition`` finds the test under which a dtype
expression is bfloat16 (``args.bf16`` true), and ``truth`` evaluates another expression
assuming it (``args.fp16 or True`` is True: the scaler is on in the bf16 runs). Names are
followed to their one assignment in the enclosing functions or the module; tests compare by
their source text. Anything else is unknown (None), and callers stay silent on it.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.amp import dtype_literal, literal_bool
from dtype_lint.facts.training import child_nodes

MAX_DEPTH = 6


def _text(ctx, node: cst.CSTNode) -> str:
    return " ".join(ctx.code_for(node).split())


def binding(ctx, name: cst.Name) -> cst.BaseExpression | None:
    """The one expression assigned to ``name`` in the function it is used in, else in the
    functions around it (a closure), else at module level; None when there are several or none."""
    owner = ctx.enclosing(name, cst.FunctionDef)
    while True:
        scope = owner if owner is not None else ctx.module
        body = scope.body.body if isinstance(scope, cst.FunctionDef) and isinstance(scope.body, cst.IndentedBlock) else (
            scope.body if not isinstance(scope, cst.FunctionDef) else ())
        values = list(_assignments(body, name.value))
        if len(values) == 1:
            return values[0]
        if values or owner is None:
            return None
        owner = ctx.enclosing(owner, cst.FunctionDef)


def _assignments(body, name: str):
    """Values assigned to ``name`` by ``name = value`` in ``body`` (not inside nested defs)."""
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value == name:
                    yield node.value
                elif not isinstance(target.target, (cst.Attribute, cst.Subscript)) and name in {
                    n.value for n in _names(target.target)
                }:
                    yield None  # a tuple target: not one expression
            continue
        if isinstance(node, (cst.AugAssign, cst.AnnAssign)) and isinstance(node.target, cst.Name) \
                and node.target.value == name:
            yield None
            continue
        stack.extend(child_nodes(node))


def _names(target: cst.CSTNode):
    if isinstance(target, cst.Name):
        yield target
    for child in child_nodes(target):
        yield from _names(child)


def bf16_condition(ctx, dtype_expr: cst.BaseExpression | None, depth: int = 0) -> tuple[str, bool] | None:
    """(test text, value) under which ``dtype_expr`` is bfloat16: ``torch.bfloat16 if args.bf16
    else torch.float16`` gives ("args.bf16", True); through names."""
    if dtype_expr is None or depth > MAX_DEPTH:
        return None
    if isinstance(dtype_expr, cst.Name) and dtype_literal(ctx.names, dtype_expr) is None:
        bound = binding(ctx, dtype_expr)
        return bf16_condition(ctx, bound, depth + 1) if bound is not None else None
    if isinstance(dtype_expr, cst.IfExp):
        body, orelse = dtype_literal(ctx.names, dtype_expr.body), dtype_literal(ctx.names, dtype_expr.orelse)
        if body == "bfloat16" and orelse != "bfloat16":
            return _test(ctx, dtype_expr.test, True)
        if orelse == "bfloat16" and body != "bfloat16":
            return _test(ctx, dtype_expr.test, False)
    return None


def _test(ctx, test: cst.BaseExpression, value: bool) -> tuple[str, bool]:
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, value = test.expression, not value
    return _text(ctx, test), value


def dtype_under(ctx, expr: cst.BaseExpression, assume: dict[str, bool], depth: int = 0) -> str | None:
    """The dtype (``"bfloat16"``...) ``expr`` names on the runs where ``assume`` holds."""
    if depth > MAX_DEPTH:
        return None
    literal = dtype_literal(ctx.names, expr)
    if literal is not None:
        return literal
    if isinstance(expr, cst.Name):
        bound = binding(ctx, expr)
        return dtype_under(ctx, bound, assume, depth + 1) if bound is not None else None
    if isinstance(expr, cst.IfExp):
        holds = truth(ctx, expr.test, assume, depth + 1)
        if holds is None:
            return None
        return dtype_under(ctx, expr.body if holds else expr.orelse, assume, depth + 1)
    return None


def truth(ctx, expr: cst.BaseExpression | None, assume: dict[str, bool], depth: int = 0) -> bool | None:
    """The truth of ``expr`` on the runs where each test text of ``assume`` has its value
    (three-valued: None when it depends on something else)."""
    if expr is None or depth > MAX_DEPTH:
        return None
    text = _text(ctx, expr)
    if text in assume:
        return assume[text]
    literal = literal_bool(expr)
    if literal is not None:
        return literal
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = truth(ctx, expr.expression, assume, depth + 1)
        return None if inner is None else not inner
    if isinstance(expr, cst.BooleanOperation):
        left = truth(ctx, expr.left, assume, depth + 1)
        right = truth(ctx, expr.right, assume, depth + 1)
        if isinstance(expr.operator, cst.Or):
            if left is True or right is True:
                return True
            return False if left is False and right is False else None
        if left is False or right is False:
            return False
        return True if left is True and right is True else None
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        target = expr.comparisons[0]
        if isinstance(target.operator, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)):
            left = dtype_under(ctx, expr.left, assume, depth + 1)
            right = dtype_under(ctx, target.comparator, assume, depth + 1)
            if left is None or right is None:
                return None
            equal = left == right
            return equal if isinstance(target.operator, (cst.Equal, cst.Is)) else not equal
        return None
    if isinstance(expr, cst.Name):
        bound = binding(ctx, expr)
        return truth(ctx, bound, assume, depth + 1) if bound is not None else None
    return None


# -- a flag parameter, as the file's calls bind it ----------------------------------------------
# ``def loss_step(batch, mixed_precision=False): if mixed_precision: with autocast(): ...`` runs
# its autocast only for the callers that pass a true value: a function whose every call in the
# file binds the flag to False (``train_inversion(..., mixed_precision=False)``, itself passing
# ``mixed_precision=mixed_precision`` on) never takes that branch. Anything the binding cannot
# read (``*args``, ``**kwargs``, a name used as a value elsewhere, no call) is unknown.


def _parameters(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def callee_name(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
        return func.attr.value
    return None


def argument(call: cst.Call, function: cst.FunctionDef, name: str) -> tuple[bool, cst.BaseExpression | None]:
    """(known, the expression ``call`` binds to parameter ``name`` of ``function``: the keyword,
    the positional argument, else the default)."""
    if any(a.star for a in call.args):
        return False, None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return True, arg.value
    positional_params = [*function.params.posonly_params, *function.params.params]
    if positional_params and positional_params[0].name.value in ("self", "cls") and isinstance(call.func, cst.Attribute):
        positional_params = positional_params[1:]
    given = [a.value for a in call.args if a.keyword is None]
    for index, param in enumerate(positional_params):
        if param.name.value == name:
            if index < len(given):
                return True, given[index]
            break
    param = next((p for p in _parameters(function) if p.name.value == name), None)
    if param is None or param.default is None:
        return False, None
    return True, param.default


def calls_of(ctx, function: cst.FunctionDef) -> list[cst.Call] | None:
    """Every call of ``function`` in this file, or None when its name is also used otherwise
    (handed on as a value, so called from where the file does not say)."""
    from dtype_lint.facts.training import training_facts

    name = function.name.value
    calls = [c for c in training_facts(ctx).calls if callee_name(c) == name]
    called = {id(c.func) for c in calls} | {id(c.func.attr) for c in calls if isinstance(c.func, cst.Attribute)}
    for node in ctx.all_nodes:
        if type(node) is cst.Name and node.value == name and id(node) not in called \
                and node is not function.name and not _is_attribute_name(ctx, node):
            return None
    return calls


def _is_attribute_name(ctx, node: cst.Name) -> bool:
    parent = ctx.parent(node)
    return isinstance(parent, cst.Attribute) and parent.attr is node and not (
        isinstance(parent.value, cst.Name) and parent.value.value in ("self", "cls"))


def parameter_truth(ctx, function: cst.FunctionDef, name: str, calls=None, depth: int = 0) -> bool | None:
    """The truth of parameter ``name`` of ``function`` on every call (``calls``, else every call
    in the file): one value when they all agree, else None."""
    if depth > MAX_DEPTH:
        return None
    if calls is None:
        calls = calls_of(ctx, function)
    if not calls:
        return None
    values = set()
    for call in calls:
        known, expr = argument(call, function, name)
        if not known:
            return None
        value = literal_bool(expr)
        if value is None and isinstance(expr, cst.Name):
            caller = ctx.enclosing(call, cst.FunctionDef)
            if caller is not None and any(p.name.value == expr.value for p in _parameters(caller)):
                value = parameter_truth(ctx, caller, expr.value, None, depth + 1)
        if value is None:
            return None
        values.add(value)
    return values.pop() if len(values) == 1 else None


def branch_never_taken(ctx, node: cst.CSTNode, calls=None) -> bool:
    """``node`` sits in a branch of ``if P:`` (``if not P:``) on a parameter ``P`` of its function
    that the calls (``calls``, else every call of the function in the file) never take."""
    function = ctx.enclosing(node, cst.FunctionDef)
    if function is None:
        return False
    names = {p.name.value for p in _parameters(function)}
    child, current = node, ctx.parent(node)
    while current is not None and current is not function:
        if isinstance(current, cst.If) and child is not current.test:
            test, positive = current.test, child is current.body
            while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, positive = test.expression, not positive
            if isinstance(test, cst.Name) and test.value in names:
                value = parameter_truth(ctx, function, test.value, calls)
                if value is not None and value != positive:
                    return True
        child, current = current, ctx.parent(current)
    return False

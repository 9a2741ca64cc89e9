"""The ``if`` branches a node sits in, and whether two nodes can run in one configuration.

A flow value joins the paths of every branch (``vae`` is float32 or float16 after
``if a: vae.float() else: vae.to(weight_dtype)``), so a rule that pairs two dtypes of two values
asks here whether the nodes that gave them can both run: never when they sit in the two sides
of one ``if``, or under tests that contradict (``if args.fp32_vae:`` and ``if not
args.fp32_vae:``, ``mode == "fp16"`` and ``mode == "no"``). Tests compare by their source text.
"""

from __future__ import annotations

import dataclasses

import libcst as cst


@dataclasses.dataclass(frozen=True)
class Branch:
    statement: cst.If  # the ``if`` (or ``elif``) whose test decides it
    test: str  # the test's source text, without a leading ``not`` / with ``is not`` read as ``is``
    holds: bool  # True: the node runs when ``test`` is true (its body); False: its else side


def _normalized(ctx, test: cst.BaseExpression) -> tuple[str, bool]:
    positive = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, positive = test.expression, not positive
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        flips = {cst.IsNot: " is ", cst.NotEqual: " == "}
        for kind, spelled in flips.items():
            if isinstance(target.operator, kind):
                left = " ".join(ctx.code_for(test.left).split())
                right = " ".join(ctx.code_for(target.comparator).split())
                return f"{left}{spelled}{right}", not positive
    return " ".join(ctx.code_for(test).split()), positive


def branches(ctx, node: cst.CSTNode) -> tuple[Branch, ...]:
    """The ``if`` branches around ``node`` (innermost first), up to its function."""
    found: list[Branch] = []
    child, current = node, ctx.parent(node)
    while current is not None and not isinstance(current, (cst.FunctionDef, cst.Lambda)):
        if isinstance(current, cst.If) and child is not current.test:
            test, positive = _normalized(ctx, current.test)
            found.append(Branch(current, test, positive if child is current.body else not positive))
        child, current = current, ctx.parent(current)
    return tuple(found)


def _equality(test: str) -> tuple[str, str] | None:
    left, sep, right = test.partition(" == ")
    return (left, right) if sep and right[:1] in "\"'" else None


def exclusive(ctx, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """``a`` and ``b`` never run in one pass: the two sides of one ``if``, or contradicting tests."""
    for first in branches(ctx, a):
        for second in branches(ctx, b):
            if first.statement is second.statement or first.test == second.test:
                if first.holds != second.holds:
                    return True
                continue
            # ``mode == "fp16"`` and ``mode == "no"``: one variable, two literals
            one, other = _equality(first.test), _equality(second.test)
            if first.holds and second.holds and one and other and one[0] == other[0] and one[1] != other[1]:
                return True
    return False


def runs_whenever(ctx, node: cst.CSTNode, later: cst.CSTNode) -> bool:
    """Every branch ``node`` sits in also holds ``later``: when ``later`` runs, ``node`` ran (in
    one function, ``node`` written first)."""
    around = {(id(b.statement), b.holds) for b in branches(ctx, later)}
    return all((id(b.statement), b.holds) in around for b in branches(ctx, node))


def chosen_against(ctx, optimizer_call: cst.Call, origin: cst.CSTNode | None) -> bool:
    """The optimizer's parameters are a choice ``masters if flag else model.parameters()`` that
    takes the model's parameters only when ``flag`` is false, while the model became low
    precision only under ``if flag:`` (the cast itself, or every call of the helper that casts
    it, sits in that branch): the two never meet in one configuration (apex-O2 style
    ``network_to_half`` with float32 master weights)."""
    from dtype_lint.facts import flag_logic

    if origin is None or not optimizer_call.args:
        return False
    params = optimizer_call.args[0].value
    if isinstance(params, cst.Name):
        params = flag_logic.binding(ctx, params)
    if not isinstance(params, cst.IfExp):
        return False
    test, positive = _normalized(ctx, params.test)
    if _calls_parameters(params.body) and not _calls_parameters(params.orelse):
        model_when = positive
    elif _calls_parameters(params.orelse) and not _calls_parameters(params.body):
        model_when = not positive
    else:
        return False
    sites = [origin]
    function = ctx.enclosing(origin, cst.FunctionDef)
    if function is not None and not any(b.test == test for b in branches(ctx, origin)):
        # a helper that casts: where it is called
        sites = [n for n in ctx.all_nodes if isinstance(n, cst.Call) and isinstance(n.func, cst.Name)
                 and n.func.value == function.name.value]
    if not sites:
        return False
    return all(any(b.test == test and b.holds != model_when for b in branches(ctx, site)) for site in sites)


def _calls_parameters(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "parameters"

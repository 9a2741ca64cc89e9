"""Cross-function facts within one file: which model a helper is given, and whether training goes on.

An evaluation or logging helper that does ``model.half()`` on the module it receives changes the
caller's module (``Module.half()``/``.to(dtype)`` work in place). That is a bug only when a caller
hands it the model it trains and keeps training afterwards: the call sits in a loop that also runs
a training step (``backward()``/``step()``, directly or in a function of this file the loop calls),
or the function making the call is itself called from such a loop (YOLOX's
``evaluate_and_save_model`` in the epoch loop). A copy (``deepcopy(model)``) or any other
expression is not the trained model.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.callees import FunctionIndex
from dtype_lint.facts.dtypes import Cast
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, calls_in, walk

_TRAINING_CALLS = ("backward", "step")


def _parameter(function: cst.FunctionDef, name: str) -> tuple[int, bool] | None:
    """(position among the positional parameters, whether the call passes ``self`` implicitly)."""
    params = list(function.params.posonly_params) + list(function.params.params)
    names = [param.name.value for param in params]
    if name not in names or name in ("self", "cls"):
        return None
    bound = bool(names) and names[0] in ("self", "cls")
    return names.index(name), bound


def _argument(call: cst.Call, name: str, position: int) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in positional[: position + 1]):
        return None
    return positional[position].value if position < len(positional) else None


def _trains(node: cst.CSTNode, index: FunctionIndex, depth: int = 1) -> bool:
    """``node`` runs a training step, directly or in a function of this file it calls (``depth`` levels)."""
    for call in calls_in(node):
        if call_name(call) in _TRAINING_CALLS:
            return True
        if depth > 0:
            callee = index.resolve(call)
            if callee is not None and _trains(callee.body, index, depth - 1):
                return True
    return False


def _in_training_loop(ctx, node: cst.CSTNode, index: FunctionIndex, calls: list[cst.Call], depth: int = 1) -> bool:
    function = ctx.enclosing(node, cst.FunctionDef)
    current = ctx.parent(node)
    while current is not None and current is not function:
        if isinstance(current, (cst.For, cst.While)) and _trains(current.body, index):
            return True
        current = ctx.parent(current)
    if function is None or depth == 0:
        return False
    return any(
        index.resolve(call) is function and _in_training_loop(ctx, call, index, calls, depth - 1)
        for call in calls
        if call is not node
    )


def _called_before_backward(ctx, model: str, calls: list[cst.Call]) -> bool:
    """``model(...)`` is called in a loop body that also runs ``backward()``: a training loop of it
    (its optimizer may come from elsewhere)."""
    for call in calls:
        if dotted_name(call.func) != model:
            continue
        loop = ctx.enclosing(call, cst.For, cst.While)
        if loop is not None and any(call_name(inner) == "backward" for inner in calls_in(loop.body)):
            return True
    return False


class PassedModels:
    """Built once per file: the file's functions and calls, for ``callers_passing_trained_model``."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.index = FunctionIndex(ctx.module, ctx.names)
        self.calls = [node for node in walk(ctx.module, into_definitions=True) if isinstance(node, cst.Call)]


def callers_passing_trained_model(
    passed: PassedModels, cast: Cast, trained: set[str]
) -> tuple[cst.Call, str] | None:
    """The first call of ``cast.function`` that passes, for the parameter ``cast`` casts, a model an
    optimizer of this file trains (or a loop of it runs backward on), from inside a training loop;
    with that model's source text."""
    ctx, index, calls = passed.ctx, passed.index, passed.calls
    function = cast.function
    if function is None:
        return None
    found = _parameter(function, cast.target.split(".")[0])
    if found is None:
        return None
    position, bound = found
    name = cast.target.split(".")[0]
    for call in calls:
        if index.resolve(call) is not function:
            continue
        offset = 1 if bound and isinstance(call.func, cst.Attribute) else 0
        if position - offset < 0:
            continue
        argument = _argument(call, name, position - offset)
        model = dotted_name(argument) if argument is not None else None
        if model is None or not (model in trained or model.split(".")[0] in trained or _called_before_backward(
            ctx, model, calls
        )):
            continue
        if _in_training_loop(ctx, call, index, calls):
            return call, model
    return None


__all__ = ["PassedModels", "callers_passing_trained_model"]

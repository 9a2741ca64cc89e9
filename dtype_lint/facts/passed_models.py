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


def _training_call(node: cst.CSTNode, index: FunctionIndex, depth: int = 1) -> cst.Call | None:
    """The training step ``node`` runs (an optimizer ``step()`` first, else ``backward()``), directly
    or in a function of this file it calls (``depth`` levels)."""
    found = None
    for call in calls_in(node):
        name = call_name(call)
        if name == "step":
            return call
        if name in _TRAINING_CALLS:
            found = found or call
        if depth > 0:
            callee = index.resolve(call)
            inner = _training_call(callee.body, index, depth - 1) if callee is not None else None
            if inner is not None and call_name(inner) == "step":
                return inner
            found = found or inner
    return found


def _training_loop_step(ctx, node: cst.CSTNode, index: FunctionIndex, calls: list[cst.Call],
                        depth: int = 1) -> cst.Call | None:
    """The training step of the loop ``node`` runs in (that loop, or one calling its function)."""
    function = ctx.enclosing(node, cst.FunctionDef)
    current = ctx.parent(node)
    while current is not None and current is not function:
        if isinstance(current, (cst.For, cst.While)):
            step = _training_call(current.body, index)
            if step is not None:
                return step
        current = ctx.parent(current)
    if function is None or depth == 0:
        return None
    for call in calls:
        if call is not node and index.resolve(call) is function:
            step = _training_loop_step(ctx, call, index, calls, depth - 1)
            if step is not None:
                return step
    return None


def _in_training_loop(ctx, node: cst.CSTNode, index: FunctionIndex, calls: list[cst.Call], depth: int = 1) -> bool:
    return _training_loop_step(ctx, node, index, calls, depth) is not None


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
        model = _trained_argument(passed, call, name, position - offset, trained)
        if model is not None and _in_training_loop(ctx, call, index, calls):
            return call, model
    return None


def _trained_argument(passed: PassedModels, call: cst.Call, name: str, position: int, trained: set[str]) -> str | None:
    """The source of the argument ``call`` gives for parameter ``name`` (``position``) when it is
    a model this file trains (not a copy, not another expression)."""
    argument = _argument(call, name, position)
    model = dotted_name(argument) if argument is not None else None
    if model is None or not (model in trained or model.split(".")[0] in trained or _called_before_backward(
        passed.ctx, model, passed.calls
    ) or averaged_each_step(passed, model.split(".")[0], trained)):
        return None
    return model


# Methods of a weight-averaging object (yolov5/timm ``ModelEMA.update(model)``, torch's
# ``AveragedModel.update_parameters(model)``) that fold the trained model into its own copy in place.
_AVERAGING_UPDATES = ("update", "update_parameters")


def averaged_each_step(passed: PassedModels, holder: str, trained: set[str]) -> bool:
    """``holder`` averages the trained model in place at every training step (``ema.update(model)``
    in the training loop): its modules (``ema.ema``, ``ema.module``) are state the run goes on
    updating and saves, as much as the trained model itself."""
    for call in passed.calls:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _AVERAGING_UPDATES
                and dotted_name(func.value) == holder and call.args):
            continue
        given = dotted_name(call.args[0].value)
        if given is None or not (given in trained or _called_before_backward(passed.ctx, given, passed.calls)):
            continue
        if _in_training_loop(passed.ctx, call, passed.index, passed.calls):
            return True
    return False


def project_helper_calls(passed: PassedModels, helpers: dict, trained: set[str]):
    """Calls of helpers of other files that cast the model they are given to a fixed low dtype
    (project/helpers.py), passing a model this file trains from a training loop:
    [(call, helper, model, the loop's training step)], in source order."""
    found = []
    for call in passed.calls:
        for helper in helpers.get(dotted_name(call.func) or "", ()):
            dtypes = _helper_dtypes(passed.ctx, call, helper)
            if not dtypes or not flag_may_be_true(call, helper):
                continue
            model = _trained_argument(passed, call, helper.param, helper.position, trained)
            step = _training_loop_step(passed.ctx, call, passed.index, passed.calls) if model else None
            if step is not None:
                found.append((call, helper, model, step, dtypes))
                break
    return found


def _helper_dtypes(ctx, call: cst.Call, helper) -> frozenset:
    """The low dtypes the helper casts to for this call: its own, or the one the caller passes
    for its dtype parameter (``evaluate(model, torch.float16)``)."""
    if helper.dtype is not None:
        return frozenset({helper.dtype})
    given = _argument(call, helper.dtype_param, helper.dtype_position) if helper.dtype_position is not None else None
    value = ctx.flow.value_of(given) if given is not None else None
    if value is None or value.kind != "dtype":
        return frozenset()
    return frozenset(value.dtypes & {"fp16", "bf16"})


def flag_may_be_true(call: cst.Call, helper) -> bool:
    """The helper's condition (a parameter of it) may be true for this call: it is passed, and
    not as a literal ``False``/``None``/``0``; left out, it takes its default (on only for ``=True``)."""
    if helper.flag is None:
        return True
    argument = _argument(call, helper.flag, helper.flag_position) if helper.flag_position is not None else None
    if argument is None:
        return helper.flag_default
    return not (isinstance(argument, cst.Name) and argument.value in ("False", "None")) and not (
        isinstance(argument, cst.Integer) and argument.value == "0")


def training_loop_step(passed: PassedModels, node: cst.CSTNode) -> cst.Call | None:
    """The training step of the loop ``node`` runs in, directly or through a caller of its function."""
    return _training_loop_step(passed.ctx, node, passed.index, passed.calls)


__all__ = ["PassedModels", "averaged_each_step", "callers_passing_trained_model", "project_helper_calls", "training_loop_step"]

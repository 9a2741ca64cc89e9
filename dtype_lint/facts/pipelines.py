"""Library pipelines that share a module being trained (diffusers' validation idiom).

``pipeline = Pipe.from_pretrained(name, unet=accelerator.unwrap_model(unet), torch_dtype=dt)`` holds
the very ``unet`` the optimizer trains: ``from_pretrained``'s ``torch_dtype`` leaves passed modules
alone, but ``pipeline.to(device, dtype=torch.float16)`` casts every component, the trained one
included (huggingface/diffusers#13895, #9565). ``shared_module_casts`` finds those casts, also
through a helper of the same file that receives the pipeline and the dtype (``log_validation``).
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from dtype_lint.facts.flow.values import LOW
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, keyword, training_facts, walk

UNWRAPS = frozenset({"unwrap_model", "unwrap"})
PLACING = frozenset({"prepare"})  # ``accelerator.prepare(unet, optimizer)``: unet is trained


@dataclasses.dataclass(frozen=True)
class SharedCast:
    cast: cst.Call | None  # ``pipeline.to(device, dtype=...)``; None: in a helper of another file
    site: cst.Call  # where it runs on the training side: the cast, or the helper call
    module: str  # the trained module the pipeline holds
    pipeline: cst.Call  # the call that built the pipeline
    helper: object = None  # the helper of another file that casts it (project/helpers.py)


def _module_argument(node: cst.BaseExpression) -> str | None:
    """``unet`` for ``unet`` and ``accelerator.unwrap_model(unet)``."""
    if isinstance(node, cst.Call) and call_name(node) in UNWRAPS and node.args:
        return dotted_name(node.args[0].value)
    return dotted_name(node)


def trained_modules(ctx) -> set[str]:
    """Modules an optimizer steps: the targets of the flow's optimizers, and what
    ``accelerator.prepare`` receives together with an optimizer."""
    trained = {o.target for o in ctx.flow.optimizers if o.target}
    optimizers = {dotted_name(o.node) for o in ctx.flow.optimizers} | set()
    for call in training_facts(ctx).calls:
        if call_name(call) not in PLACING:
            continue
        names = [dotted_name(a.value) for a in call.args]
        if any(n and "optim" in n for n in names) or optimizers & set(names):
            trained.update(n for n in names if n and "optim" not in n and "loader" not in n)
    return trained


def _low_dtype(ctx, node: cst.BaseExpression | None) -> bool:
    value = ctx.flow.value_of(node) if node is not None else None
    return value is not None and value.kind == "dtype" and bool(value.dtypes & LOW)


def _dtype_argument(call: cst.Call) -> cst.BaseExpression | None:
    found = keyword(call, "dtype") or keyword(call, "torch_dtype")
    if found is None:
        plain = [a.value for a in call.args if a.keyword is None]
        found = next((a for a in plain if "dtype" in (dotted_name(a) or "") or "float16" in (dotted_name(a) or "")), None)
    return found


def _helper_casts(ctx) -> dict[str, list[tuple[cst.Call, int, cst.BaseExpression]]]:
    """Functions of the file that cast a pipeline parameter to a dtype parameter:
    name -> [(the ``.to`` call, the pipeline's position, the dtype argument node)]."""
    helpers: dict[str, list] = {}
    for name, definitions in training_facts(ctx).functions.items():
        for function in definitions:
            params = [p.name.value for p in function.params.params]
            for node in walk(function.body):
                if not (isinstance(node, cst.Call) and call_name(node) == "to" and isinstance(node.func, cst.Attribute)):
                    continue
                receiver = dotted_name(node.func.value)
                dtype = _dtype_argument(node)
                if receiver in params and dtype is not None:
                    helpers.setdefault(name, []).append((node, params.index(receiver), dtype))
    return helpers


def shared_module_casts(ctx) -> list[SharedCast]:
    trained = trained_modules(ctx)
    if not trained:
        return []
    facts = training_facts(ctx)
    pipelines: dict[str, tuple[str, cst.Call]] = {}
    scoped: dict[tuple[int, str], tuple[str, cst.Call]] = {}
    for call in facts.calls:
        if call_name(call) != "from_pretrained" and not call_name(call).endswith("Pipeline"):
            continue
        held = next((m for a in call.args if a.keyword is not None for m in [_module_argument(a.value)] if m in trained), None)
        parent = ctx.parent(call)
        if held is not None and isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = dotted_name(parent.targets[0].target)
            if target:
                # by name, and by name in its function (a cast finds the one of its own function)
                pipelines[target] = (held, call)
                scoped.setdefault((id(ctx.enclosing(call, cst.FunctionDef)), target), (held, call))
    if not pipelines:
        return []
    helpers = _helper_casts(ctx)
    found: list[SharedCast] = []
    for call in facts.calls:
        if call_name(call) == "to" and isinstance(call.func, cst.Attribute):
            name = dotted_name(call.func.value) or ""
            held = scoped.get((id(ctx.enclosing(call, cst.FunctionDef)), name)) or pipelines.get(name)
            if held is not None and _low_dtype(ctx, _dtype_argument(call)):
                found.append(SharedCast(call, call, held[0], held[1]))
            continue
        for cast, position, dtype in helpers.get(call_name(call) if isinstance(call.func, cst.Name) else "", []):
            plain = [a.value for a in call.args if a.keyword is None]
            if position >= len(plain) or dotted_name(plain[position]) not in pipelines:
                continue
            held = pipelines[dotted_name(plain[position])]
            passed = _passed_for(call, cast, dtype, ctx)
            if passed is not None and _low_dtype(ctx, passed):
                found.append(SharedCast(cast, call, held[0], held[1]))
        found.extend(_project_helper_casts(ctx, call, pipelines))
    return found


def _project_helper_casts(ctx, call: cst.Call, pipelines: dict) -> list[SharedCast]:
    """``log_validation(pipeline, ..., weight_dtype)`` where ``log_validation`` is a function of
    another file that casts the pipeline it is given (project/helpers.py) to a low dtype."""
    from dtype_lint.facts.passed_models import _argument, flag_may_be_true

    helpers = getattr(getattr(ctx, "worlds", None), "helpers", None) or {}
    found = []
    for helper in helpers.get(dotted_name(call.func) or "", ()):
        argument = _argument(call, helper.param, helper.position)
        held = pipelines.get(dotted_name(argument) or "") if argument is not None else None
        if held is None or not flag_may_be_true(call, helper):
            continue
        if helper.dtype is None:
            given = _argument(call, helper.dtype_param, helper.dtype_position) if helper.dtype_position is not None else None
            if given is None or not _low_dtype(ctx, given):
                continue
        found.append(SharedCast(None, call, held[0], held[1], helper))
    return found


def _passed_for(call: cst.Call, cast: cst.Call, dtype: cst.BaseExpression, ctx) -> cst.BaseExpression | None:
    """The argument of ``call`` that the helper's ``dtype`` parameter receives."""
    name = dotted_name(dtype)
    function = ctx.enclosing(cast, cst.FunctionDef)
    if function is None or name is None:
        return None
    params = [p.name.value for p in function.params.params]
    if name not in params:
        return dtype  # a dtype written in the helper itself
    by_keyword = keyword(call, name)
    if by_keyword is not None:
        return by_keyword
    plain = [a.value for a in call.args if a.keyword is None]
    index = params.index(name)
    return plain[index] if index < len(plain) else None

"""Where a value promoted to float32 goes: whether every consumer takes float32 anyway.

A low-precision tensor combined with a float32 one becomes float32 (DTL508). That matters where
the result meets a low-precision consumer: a float16 layer raises on a float32 input. It does not
where every use of the result, followed through the function, ends in a consumer that takes
float32: a loss or ``.float()`` (the loss is computed in float32 anyway), a module whose forward
runs under autocast (``accelerator.prepare(unet)``: autocast casts its inputs), or a module the
dtype flow knows is float32. diffusers' training scripts add offset noise in float32 to latents
of the frozen VAE's dtype and feed the sum to the trained float32 UNet and to an MSE loss on
``.float()`` (train_dreambooth.py): the promotion is the upcast those consumers make anyway.

Followed, as the same value: arithmetic, ``torch.*`` functions, tensor methods other than casts
and a diffusers scheduler's ``add_noise``/``get_velocity``/``scale_model_input``/``step`` (they
return the sample's dtype), through assignments (tuple targets too) to the later uses of the
name in the function. Anything else (a call of an unknown function, a ``return``, a container,
a module in a low dtype) is a consumer that may not take float32: not known safe.
"""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, walk

MAX_DEPTH = 8
LOSSES = re.compile(
    r"(loss|criterion)|^(cross_entropy|nll_loss|mse_loss|l1_loss|smooth_l1_loss|huber_loss|kl_div"
    r"|binary_cross_entropy(_with_logits)?)$",
    re.IGNORECASE,
)
FLOAT32_CASTS = frozenset({"float", "double"})
LOW_CASTS = frozenset({"half", "bfloat16", "to", "type", "type_as"})
SCHEDULER_METHODS = frozenset({"add_noise", "get_velocity", "scale_model_input", "step"})
_TRANSPARENT = (cst.BinaryOperation, cst.UnaryOperation, cst.Arg, cst.Element, cst.List, cst.Tuple,
                cst.Subscript, cst.SubscriptElement, cst.Index, cst.Attribute)


def _module_takes_float32(ctx, func: cst.BaseExpression) -> bool:
    value = ctx.flow.value_of(func)
    if value is None or value.kind != "module":
        return False
    return bool(value.autocast) or (bool(value.dtypes) and value.only("fp32"))


def _call_verdict(ctx, call: cst.Call) -> str:
    """"ok" (a float32 consumer), "follow" (the call's result is the value again) or "unknown"."""
    name = call_name(call)
    if LOSSES.search(name):
        return "ok"
    if isinstance(call.func, cst.Attribute):
        if name in FLOAT32_CASTS:
            return "ok"
        owner = dotted_name(call.func.value) or ""
        if name in SCHEDULER_METHODS and "scheduler" in owner.lower():
            return "follow"
        if _module_takes_float32(ctx, call.func):
            return "ok"
        if name in LOW_CASTS:
            return "unknown"
        qualified = {q for q in ctx.names.qualified_names(call.func)}
        if any(q.startswith("torch.") for q in qualified):
            return "follow"
        if not qualified and not isinstance(call.func.value, cst.Name):
            return "follow"  # a method of a computed tensor: ``(a + b).view(...)``
        if ctx.flow.value_of(call.func.value) is not None and ctx.flow.value_of(call.func.value).kind == "tensor":
            return "follow"  # ``x.chunk(2)``, ``x.repeat(...)``: a tensor method
        return "unknown"
    if _module_takes_float32(ctx, call.func):
        return "ok"
    if any(q.startswith("torch.") for q in ctx.names.qualified_names(call.func)):
        return "follow"
    return "unknown"


def _bound_names(target: cst.BaseExpression) -> list[str] | None:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        names = []
        for element in target.elements:
            inner = _bound_names(element.value)
            if inner is None:
                return None
            names.extend(inner)
        return names
    return None


def _later_uses(ctx, function: cst.CSTNode, name: str, after: int) -> list[cst.Name]:
    return [node for node in walk(function)
            if isinstance(node, cst.Name) and node.value == name and ctx.source_order(node)[0] > after
            and not _is_target(ctx, node)]


def _is_target(ctx, node: cst.Name) -> bool:
    child, parent = node, ctx.parent(node)
    while isinstance(parent, (cst.Tuple, cst.List, cst.Element)):
        child, parent = parent, ctx.parent(parent)
    if isinstance(parent, cst.AssignTarget):
        return True
    return isinstance(parent, (cst.AugAssign, cst.AnnAssign, cst.For)) and parent.target is child


def only_float32_consumers(ctx, node: cst.CSTNode) -> bool:
    """Every use of the value ``node`` computes ends in a consumer that takes float32."""
    function = ctx.enclosing(node, cst.FunctionDef)
    if function is None:
        return False
    seen: set[str] = set()

    def ends_well(expr: cst.CSTNode, depth: int) -> bool:
        if depth > MAX_DEPTH:
            return False
        child, parent = expr, ctx.parent(expr)
        while True:
            if parent is None:
                return False
            if isinstance(parent, cst.Call):
                # a method of the value itself (``value.float()``) or a call taking it: the call decides
                verdict = _call_verdict(ctx, parent)
                if verdict == "ok":
                    return True
                if verdict == "unknown":
                    return False
                child, parent = parent, ctx.parent(parent)
                continue
            if isinstance(parent, cst.Attribute) and child is parent.value:
                child, parent = parent, ctx.parent(parent)  # ``value.float`` before its call
                continue
            if isinstance(parent, _TRANSPARENT):
                child, parent = parent, ctx.parent(parent)
                continue
            if isinstance(parent, cst.Assign) and child is parent.value:
                names = []
                for target in parent.targets:
                    bound = _bound_names(target.target)
                    if bound is None:
                        return False
                    names.extend(bound)
                end = ctx.source_order(parent)[1]
                for name in names:
                    if name in seen:
                        continue
                    seen.add(name)
                    uses = _later_uses(ctx, function, name, end)
                    if not uses or not all(ends_well(use, depth + 1) for use in uses):
                        return False
                return True
            return False

    return ends_well(node, 0)

"""A module upcast in place under a test of its own dtype, with its input cast only there.

diffusers' pipelines keep the VAE in float32 when float16 would overflow:

    needs_upcasting = self.vae.dtype == torch.float16 and self.vae.config.force_upcast
    if needs_upcasting:
        self.upcast_vae()                       # self.vae.to(dtype=torch.float32), in place
        latents = latents.to(next(iter(self.vae.post_quant_conv.parameters())).dtype)
    image = self.vae.decode(latents)

`nn.Module.to` (and the pipelines' `upcast_vae()`, which casts `self.vae` to float32) changes the
module the object keeps: unless it is cast back after the call, the next call finds
`self.vae.dtype == torch.float32`, skips the branch, and feeds the pipeline's float16 latents to
the float32 VAE ("Input type (c10::Half) and bias type (float) should be the same";
huggingface/diffusers d4b2bfc, 0ea5162). The facts here are syntactic: which module the test reads,
which statement upcasts it, which input the branch casts, and whether the function casts the
module again (then it is restored, and the contract is kept).
"""

from __future__ import annotations

import bisect
import dataclasses
import re

import libcst as cst

from dtype_lint.facts.lowp_contract import VAE_INPUT_METHODS
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, keyword, positional, walk

# Methods of a pipeline that upcast one of its modules to float32 in place (diffusers'
# StableDiffusionXLPipeline.upcast_vae and its copies): method -> the module, relative to self.
UPCAST_METHODS = {"upcast_vae": "vae"}
# Methods of a module that run its layers on their first argument as given (diffusers' autoencoders).
INPUT_METHODS = VAE_INPUT_METHODS
FLOAT32 = re.compile(r"^(torch\.)?float(32)?$")


@dataclasses.dataclass(frozen=True)
class InplaceUpcast:
    branch: cst.If  # ``if needs_upcasting:``
    module: str  # ``self.vae``
    upcast: cst.Call  # ``self.upcast_vae()`` / ``self.vae.to(dtype=torch.float32)``
    input_name: str  # ``latents``: cast to the module's dtype only inside the branch
    call: cst.Call  # ``self.vae.decode(latents / ...)`` after the branch


def upcasts_in(ctx, function: cst.FunctionDef) -> list[InplaceUpcast]:
    if not _may_upcast(ctx, function):
        return []  # (asked of every function: most hold no statement ``_upcasts`` could yield)
    found = []
    persistent_roots = {"self", *_parameters(function)}
    for branch in (node for node in walk(function.body) if isinstance(node, cst.If)):
        if not _may_upcast(ctx, branch):
            continue  # (a pipeline's ``__call__`` holds dozens of branches, nested: walked once each)
        for upcast, module in _upcasts(branch.body):
            if module.split(".", 1)[0] not in persistent_roots or not _tests_low_dtype(ctx, function, branch, module):
                continue
            if _casts_again(ctx, function, module):
                continue  # cast back (``if needs_upcasting: self.vae.to(dtype=torch.float16)``)
            for name in _inputs_cast_in(branch.body, module):
                for call in _later_input_calls(ctx, function, branch, module, name):
                    found.append(InplaceUpcast(branch, module, upcast, name, call))
    return found


# The methods of the statements ``_upcasts`` yields: ``self.upcast_vae()``, ``x.float()``, ``x.to(...)``.
_UPCAST_CALLS = frozenset({*UPCAST_METHODS, "float", "to"})


def _may_upcast(ctx, scope: cst.FunctionDef | cst.If) -> bool:
    """``scope`` holds an ``x.<method>(...)`` statement of ``_UPCAST_CALLS``: one bisection in
    the file's sorted walk numbers of such statements, found in one pass over its nodes."""
    starts = ctx.__dict__.get("_upcast_statements")
    if starts is None:
        order = ctx.source_order
        starts = ctx.__dict__["_upcast_statements"] = [
            order(node)[0] for node in ctx.all_nodes
            if type(node) is cst.Expr and type(node.value) is cst.Call and type(node.value.func) is cst.Attribute
            and node.value.func.attr.value in _UPCAST_CALLS]
    try:
        enter, leave = ctx.source_order(scope)
    except KeyError:  # not a node of this file's tree: look at it
        return True
    index = bisect.bisect_right(starts, enter)
    return index < len(starts) and starts[index] < leave


def _parameters(function: cst.FunctionDef) -> list[str]:
    params = function.params
    return [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]


def _upcasts(body: cst.CSTNode):
    """``(call, module)`` for each statement of ``body`` that casts a module to float32 in place."""
    for node in walk(body, into_definitions=True):
        if not isinstance(node, cst.Expr) or not isinstance(node.value, cst.Call):
            continue
        call = node.value
        func = call.func
        if not isinstance(func, cst.Attribute):
            continue
        receiver = dotted_name(func.value)
        if receiver is None:
            continue
        if receiver == "self" and func.attr.value in UPCAST_METHODS:
            yield call, f"self.{UPCAST_METHODS[func.attr.value]}"
        elif func.attr.value == "float" and not call.args:
            yield call, receiver
        elif func.attr.value == "to":
            dtype = keyword(call, "dtype") or next(
                (a.value for a in call.args if a.keyword is None and FLOAT32.match(dotted_name(a.value) or "")), None)
            if dtype is not None and FLOAT32.match(dotted_name(dtype) or ""):
                yield call, receiver


def _tests_low_dtype(ctx, function: cst.FunctionDef, branch: cst.If, module: str) -> bool:
    """The branch's test compares ``module.dtype`` with float16, itself or through a name assigned
    such a comparison in the function (``needs_upcasting = self.vae.dtype == torch.float16 and ...``)."""
    spelled = re.compile(rf"(?<![\w.]){re.escape(module)}\.dtype\s*==\s*torch\.(float16|half)\b")
    test = ctx.code_for(branch.test)
    if spelled.search(test):
        return True
    names = {dotted_name(n) for n in walk(branch.test) if isinstance(n, cst.Name)}
    for node in walk(function.body):
        if isinstance(node, cst.Assign) and any(dotted_name(t.target) in names for t in node.targets):
            if spelled.search(ctx.code_for(node.value)):
                return True
    return False


def _casts_again(ctx, function: cst.FunctionDef, module: str) -> bool:
    """``module`` is cast anywhere else than to float32 (``.to(...)``, ``.half()``, an assignment
    outside ``__init__``), in the function, or, for ``self.vae``, in any method of the class (a
    helper that casts it back before the next call's test): the upcast may be undone; stay silent."""
    scope = ctx.enclosing(function, cst.ClassDef) if module.startswith("self.") else None
    upcasts = {id(call) for call, _ in _upcasts(scope or function)}
    for node in walk(scope or function, into_definitions=True):
        if isinstance(node, cst.Call) and id(node) not in upcasts and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in ("to", "half", "float", "bfloat16", "type") \
                and dotted_name(node.func.value) == module:
            if scope is not None and _restores_its_own(ctx, scope, function, node, module):
                continue
            return True
        if isinstance(node, (cst.Assign, cst.AugAssign)):
            targets = node.targets if isinstance(node, cst.Assign) else (node,)
            method = ctx.enclosing(node, cst.FunctionDef)
            if any(dotted_name(t.target) == module for t in targets) and not (method and method.name.value == "__init__"):
                return True
    return False


def _restores_its_own(ctx, scope: cst.ClassDef, function: cst.FunctionDef, cast: cst.Call, module: str) -> bool:
    """A cast back in another method of the class, under a test that ``module`` is float16 read in
    that method (``needs_upcasting = self.vae.dtype == torch.float16 and ...`` then ``if
    needs_upcasting: self.vae.to(dtype=torch.float16)``), undoes only an upcast made while the module
    was still float16 when the test was read. ``function``'s upcast left it float32: read after it,
    the test is false and the cast back never runs. It can undo ``function``'s upcast only when a
    method of the class (``function`` itself, or one that may call it) runs between the test and the
    cast back; the pipelines' own ``upcast_vae()`` does not count (huggingface/diffusers 0ea5162:
    ``prepare_image_latents`` upcasts, ``__call__`` reads ``needs_upcasting`` later)."""
    other = ctx.enclosing(cast, cst.FunctionDef)
    if other is None or other is function:
        return False
    order = ctx.source_order
    guards = [node for node in walk(other.body) if isinstance(node, cst.If)
              and order(node.body)[0] <= order(cast)[0] <= order(node.body)[1]]
    for guard in guards:
        if not _tests_low_dtype(ctx, other, guard, module):
            continue
        spelled = re.compile(rf"(?<![\w.]){re.escape(module)}\.dtype\s*==\s*torch\.(float16|half)\b")
        if spelled.search(ctx.code_for(guard.test)):
            return True  # read at the cast back itself: a float32 module is never cast there
        names = {n.value for n in walk(guard.test) if isinstance(n, cst.Name)}
        tests = [node for node in walk(other.body) if isinstance(node, cst.Assign)
                 and any(dotted_name(t.target) in names for t in node.targets) and spelled.search(ctx.code_for(node.value))]
        if not tests or len(tests) != len([node for node in walk(other.body) if isinstance(node, cst.Assign)
                                           and any(dotted_name(t.target) in names for t in node.targets)]):
            return False  # the flag is also set otherwise: it may be true for another reason
        read = min(order(node)[0] for node in tests)
        methods = {d.name.value for d in scope.body.body if isinstance(d, cst.FunctionDef)} - set(UPCAST_METHODS)
        between = [node for node in walk(other.body) if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                   and dotted_name(node.func.value) == "self" and node.func.attr.value in methods
                   and read < order(node)[0] < order(cast)[0]]
        return not between
    return False


def _inputs_cast_in(body: cst.CSTNode, module: str) -> list[str]:
    """Names the branch reassigns from a cast that reads the module (``latents = latents.to(
    next(iter(self.vae.post_quant_conv.parameters())).dtype)``, ``x = x.to(self.vae.dtype)``)."""
    names = []
    for node in walk(body):
        if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.value, cst.Call)):
            continue
        name = dotted_name(node.targets[0].target)
        value = node.value
        if name is None or call_name(value) != "to" or dotted_name(getattr(value.func, "value", None)) != name:
            continue
        if any(module in (dotted_name(n) or "") for a in value.args for n in walk(a.value)
               if isinstance(n, (cst.Attribute, cst.Name))):
            names.append(name)
    return names


def _later_input_calls(ctx, function, branch: cst.If, module: str, name: str) -> list[cst.Call]:
    """Each ``module.decode(<name ...>)`` after the branch whose input is ``name`` as the branch
    left it (no reassignment of ``name`` between them) and is not cast to the module's dtype there."""
    order = ctx.source_order
    end = order(branch)[1]
    calls = []
    for node in walk(function.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in INPUT_METHODS \
                and dotted_name(node.func.value) == module and order(node)[0] > end:
            calls.append(node)
    found = []
    for call in sorted(calls, key=lambda c: order(c)[0]):
        argument = positional(call, 0)
        if argument is None:
            continue
        roots = {n.value for n in walk(argument) if isinstance(n, cst.Name)}
        follows = re.compile(rf"(?<![\w.]){re.escape(module)}[\w.]*\.(dtype|parameters)\b")
        if name not in roots or follows.search(ctx.code_for(argument)):
            continue  # ``latents.to(self.vae.dtype)``: cast on every path
        reassigned = any(
            isinstance(node, cst.Assign) and any(dotted_name(t.target) == name for t in node.targets)
            and end < order(node)[0] < order(call)[0]
            for node in walk(function.body)
        )
        if not reassigned:
            found.append(call)
    return found

"""A library object's component whose dtype is its own, given a tensor cast to another dtype.

A diffusers pipeline runs in the ``torch_dtype`` it was loaded with, except its VAE, which users
keep in float32 (``pipe.vae.to(torch.float32)``, a VAE loaded apart in float32 and passed as
``vae=``, the ``force_upcast`` / ``upcast_vae()`` idiom) or leave in the pipeline's dtype
(facts/lowp_contract.py, ``Contract.own_dtype``). ``self.vae.encode(x)`` / ``decode(z)`` run the
VAE's first conv on their input as given, so a pipeline casts that input to ``self.vae.dtype``.
An input whose dtype the method fixed itself to something else meets one of the two VAEs with
another dtype ("Input type (c10::Half) and bias type (float) should be the same"):

    video_condition = video_condition.to(device=device, dtype=dtype)   # dtype: torch.float32 from __call__
    latent_condition = self.vae.encode(video_condition)                # a bfloat16 VAE

Decided here, syntactically: the input's last cast on every path to the call
(through the dtype-keeping steps between: arithmetic on it, slicing, ``.to(device)``), and what
that cast names: a dtype constant, another component's dtype (``prompt_embeds.dtype``,
``self.transformer.dtype``) or a parameter every caller in the class gives one of those. A cast
that names the component's own dtype anywhere (``dtype or self.vae.dtype``), a parameter some
caller gives the component's dtype or something unknown, and any input the method did not cast
leave it silent. It counts only where the file itself shows that the component's dtype is its
own (it casts some input to ``self.vae.dtype``, upcasts the VAE, reads ``force_upcast``, or its
documented example keeps the VAE in float32): many pipelines cast the VAE's input to the dtype of
their prompt embeddings, written for a VAE in the pipeline's dtype; measured on diffusers itself,
most such casts sit in files that never treat the VAE apart, where the claim is debatable.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from dtype_lint.facts import lowp_contract
from dtype_lint.facts.branch_conditions import runs_whenever
from dtype_lint.facts.flow import library as lib
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, keyword, positional, walk

# Tensor methods that keep the dtype (what lies between the cast and the component's call).
_KEEPING_METHODS = frozenset(
    "cpu cuda contiguous clone detach unsqueeze squeeze permute reshape view flatten repeat repeat_interleave"
    " expand chunk transpose flip".split()
)
_CAST_METHODS = frozenset({"half", "float", "bfloat16", "double"})


@dataclasses.dataclass(frozen=True)
class OtherDtypeInput:
    call: cst.Call  # ``self.vae.encode(video_condition)``
    component: str  # ``self.vae``
    argument: cst.BaseExpression  # the input as written in the call
    name: str  # ``video_condition``
    cast: cst.Call  # ``video_condition.to(device=device, dtype=dtype)``
    feeds_only: bool  # nothing reads the cast tensor before the component's call: the cast is its input's
    dtype_text: str  # what the cast names: ``torch.float32`` / ``prompt_embeds.dtype``
    via: cst.CSTNode | None  # the caller's argument when the cast names a parameter
    evidence: cst.CSTNode | None  # where the file shows the component's dtype is its own
    why: str


def class_contract(ctx, cls: cst.ClassDef) -> lowp_contract.Contract | None:
    """The library contract ``cls`` is under through its bases (directly, or through a class of
    this file): the same reading as the interpreter's."""
    found = lowp_contract.derived_library_base(ctx, cls, [(c.library, c.base) for c in lowp_contract.CONTRACTS])
    return next(c for c in lowp_contract.CONTRACTS if (c.library, c.base) == found) if found else None


def inputs_in(ctx, function: cst.FunctionDef) -> list[OtherDtypeInput]:
    cls = ctx.enclosing(function, cst.ClassDef)
    if cls is None:
        return []
    contract = class_contract(ctx, cls)
    if contract is None or not contract.own_dtype:
        return []
    found = []
    for component, methods in contract.own_dtype:
        module = f"self.{component}"
        calls = [node for node in walk(function.body) if isinstance(node, cst.Call)
                 and isinstance(node.func, cst.Attribute) and node.func.attr.value in methods
                 and dotted_name(node.func.value) == module]
        if not calls or _casts_component(function, module, component):
            continue  # the method sets the component's dtype itself (facts/inplace_upcast.py's shape)
        evidence = _own_dtype_evidence(ctx, cls, component)
        for call in calls:
            item = _other_dtype_input(ctx, function, cls, call, module, component)
            if item is not None:
                argument, name, cast, text, via, kind = item
                if evidence is None:
                    continue  # only where the file shows the VAE apart
                feeds_only = _feeds_only(ctx, cast, call, name, {id(c) for c in calls})
                found.append(OtherDtypeInput(call, module, argument, name, cast, feeds_only, text, via, evidence,
                                             contract.own_dtype_why))
    return found


def _casts_component(function: cst.FunctionDef, module: str, component: str) -> bool:
    for node in walk(function.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if dotted_name(node.func.value) == module and node.func.attr.value in ("to", "float", "half", "bfloat16", "type"):
                return True
            if dotted_name(node.func.value) == "self" and node.func.attr.value == f"upcast_{component}":
                return True
    return False


def _own_dtype_evidence(ctx, cls: cst.ClassDef, component: str) -> cst.CSTNode | None:
    """Where the file shows ``self.<component>``'s dtype is its own: an input cast to
    ``self.<component>.dtype``, an upcast of it (``self.vae.to(torch.float32)``,
    ``upcast_vae()``, ``force_upcast``), or the documented example keeping it in float32."""
    own = f"self.{component}"
    for node in walk(cls, into_definitions=True):
        if isinstance(node, cst.Attribute) and node.attr.value == "dtype" and dotted_name(node.value) == own:
            parent = ctx.parent(node)
            if not isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
                return node  # read as a dtype to cast to, not tested
        if isinstance(node, cst.Attribute) and node.attr.value == "force_upcast":
            return node
        if isinstance(node, cst.Call) and call_name(node) == f"upcast_{component}":
            return node
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and dotted_name(node.func.value) == own \
                and (call_name(node) == "float" or call_name(node) == "to" and _names_float32(ctx, node)):
            return node
    example = re.compile(rf"\b{component}\.to\((dtype=)?torch\.float32\)|subfolder=[\"']{component}[\"'][^)]*torch_dtype=torch\.float32")
    for statement in ctx.module.body:
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign) \
                and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            if example.search(ctx.code_for(statement.body[0].value)):
                return statement.body[0].value
    return None


def _names_float32(ctx, call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "dtype":
            if lib.dtype_constant(ctx.names, arg.value) == "fp32":
                return True
    return False


def _primary(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The tensor an expression carries, dtype unchanged: ``x`` for ``x[i : i + 1]``, ``x / s``,
    ``1 / s * x``, ``x.cpu()``; a cast call is returned as itself."""
    for _ in range(12):
        if isinstance(node, cst.Name):
            return node
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.BinaryOperation):
            left, right = _primary(node.left), _primary(node.right)
            node = left if isinstance(left, (cst.Name, cst.Call)) else right
            if node is None:
                return None
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if cast_dtype(node) is not None or node.func.attr.value in _CAST_METHODS:
                return node
            if node.func.attr.value in _KEEPING_METHODS or node.func.attr.value == "to":
                node = node.func.value
            else:
                return None
        else:
            return None
    return None


def cast_dtype(call: cst.Call) -> cst.BaseExpression | None:
    """The dtype a ``.to(...)`` / ``.type(...)`` call casts to, else None."""
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in ("to", "type"):
        return None
    given = keyword(call, "dtype")
    if given is not None:
        return given
    for arg in call.args:
        if arg.keyword is None and not arg.star and re.search(r"dtype|float|half|bfloat", dotted_name(arg.value) or ""):
            return arg.value
    return None


def _other_dtype_input(ctx, function, cls, call, module, component):
    argument = positional(call, 0)
    if argument is None:
        argument = keyword(call, "x") or keyword(call, "z") or keyword(call, "sample")
    if argument is None or re.search(rf"\b{component}[\w.]*\.(dtype|parameters)\b", ctx.code_for(argument)):
        return None  # cast to the component's own dtype in the call
    primary = _primary(argument)
    if isinstance(primary, cst.Call):
        cast, name = primary, dotted_name(primary.func.value) or ctx.code_for(primary.func.value)
    elif isinstance(primary, cst.Name):
        name = primary.value
        cast = _last_cast(ctx, function, call, name)
    else:
        return None
    if cast is None:
        return None
    dtype = cast_dtype(cast)
    if dtype is None:
        return None  # ``.half()`` / ``.float()``: another rule's fixed dtype; not this contract
    kind = _classify(ctx, function, dtype, component)
    if kind == "parameter":
        via = _callers_fix(ctx, cls, function, dtype.value, component)
        if via is None:
            return None
        return argument, name, cast, ctx.code_for(via), via, kind
    if kind is None:
        return None
    return argument, name, cast, ctx.code_for(dtype), None, kind


def _last_cast(ctx, function, call, name: str) -> cst.Call | None:
    """The cast that last set ``name``'s dtype before ``call``, running whenever ``call`` runs,
    through assignments that keep it (``x = x / s``, ``x = (1 - a) * x + a * noise``)."""
    order = ctx.source_order
    assigns = sorted(
        (node for node in walk(function.body) if isinstance(node, cst.Assign) and len(node.targets) == 1
         and isinstance(node.targets[0].target, cst.Name) and node.targets[0].target.value == name
         and order(node)[1] < order(call)[0]),
        key=lambda node: order(node)[0],
    )
    if not assigns:
        return None
    for assign in reversed(assigns):
        value = assign.value
        primary = _primary(value)
        if isinstance(primary, cst.Call):
            if cast_dtype(primary) is None or not runs_whenever(ctx, assign, call):
                return None
            receiver = _primary(primary.func.value)
            if isinstance(receiver, cst.Call) and cast_dtype(receiver) is not None:
                return None  # two casts in a row: read the outer one only when simple
            return primary
        if isinstance(primary, cst.Name) and primary.value == name or _mentions(value, name):
            if any(isinstance(n, cst.Call) and (cast_dtype(n) is not None or call_name(n) in _CAST_METHODS)
                   for n in walk(value)):
                return None
            continue  # keeps the dtype: look further back
        return None  # another source: its dtype is not the method's choice here
    return None


def _feeds_only(ctx, cast: cst.Call, call: cst.Call, name: str, component_calls: set) -> bool:
    """No statement between ``cast`` and ``call`` reads ``name`` except to reassign it from itself:
    the cast is there for the component (fix it there); otherwise the tensor serves other code in
    that dtype too, and the fix is a cast at the component's input."""
    order = ctx.source_order
    start, end = order(cast)[1], order(call)[0]
    function = ctx.enclosing(call, cst.FunctionDef)
    for node in walk(function.body):
        if isinstance(node, cst.Name) and node.value == name and start < order(node)[0] < end:
            parent = ctx.parent(node)
            if isinstance(parent, cst.AssignTarget) or _inside(ctx, node, component_calls):
                continue  # rebound, or given to the component (another branch's encode)
            return False
    return True


def _inside(ctx, node: cst.CSTNode, calls: set) -> bool:
    current = ctx.parent(node)
    while current is not None and not isinstance(current, cst.BaseStatement):
        if id(current) in calls:
            return True
        current = ctx.parent(current)
    return False


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n in walk(node))


def _classify(ctx, function, dtype: cst.BaseExpression, component: str, depth: int = 0) -> str | None:
    """What a cast's dtype names: "constant", "other" (another tensor's or component's dtype),
    "parameter" (a parameter of ``function``), or None (the component's own, or unknown)."""
    if depth > 3 or component in ctx.code_for(dtype):
        return None
    if lib.dtype_constant(ctx.names, dtype) is not None:
        return "constant"
    if isinstance(dtype, cst.Attribute) and dtype.attr.value == "dtype":
        owner = dotted_name(dtype.value)
        if owner is None or owner == "self":
            return None  # ``self.dtype``: the pipeline's own, which may be the VAE's
        if isinstance(dtype.value, cst.Name) and any(
                component in ctx.code_for(node.value) for node in walk(function.body) if isinstance(node, cst.Assign)
                and any(isinstance(t.target, cst.Name) and t.target.value == owner for t in node.targets)):
            return None  # ``video.dtype`` where ``video = video.to(self.vae.dtype)``: the component's own
        return "other"
    if isinstance(dtype, cst.Name):
        name = dtype.value
        assigned = [node.value for node in walk(function.body) if isinstance(node, cst.Assign)
                    and any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets)]
        params = function.params
        is_param = any(p.name.value == name for p in (*params.posonly_params, *params.params, *params.kwonly_params))
        if is_param and not assigned:
            return "parameter"
        if assigned and not is_param:
            kinds = {_classify(ctx, function, value, component, depth + 1) for value in assigned}
            if len(kinds) == 1 and next(iter(kinds)) in ("constant", "other"):
                return next(iter(kinds))
    return None


def _callers_fix(ctx, cls: cst.ClassDef, function: cst.FunctionDef, param: str, component: str) -> cst.CSTNode | None:
    """The argument the class's callers of ``function`` give ``param``, when every one of them
    gives a dtype constant or another tensor's dtype (the first such argument), else None."""
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    index = params.index(param) - 1 if param in params and params and params[0] == "self" else None
    found = None
    for node in walk(cls, into_definitions=True):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and dotted_name(node.func.value) == "self" and node.func.attr.value == function.name.value):
            continue
        given = keyword(node, param)
        if given is None and index is not None:
            given = positional(node, index)
        if given is None:
            return None  # a default, or ``**kwargs``: not known here
        caller = ctx.enclosing(node, cst.FunctionDef)
        if caller is None or _classify(ctx, caller, given, component) not in ("constant", "other"):
            return None
        found = found or given
    return found

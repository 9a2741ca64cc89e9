"""Classes written for float16/bfloat16, and a parameter a method treats as floating data.

A method of a class takes its tensors from the callers of the class; where one of the class's
own methods tests a tensor's dtype against a low one (``if x.dtype == torch.float16:``) or
upcasts a tensor and casts the result back to the dtype it came with (``dtype = q.dtype;
q = q.float(); ...; probs.to(dtype)``: facts/flow/lowp_evidence.py), the class is written for
callers that give it float16/bfloat16 tensors (diffusers' ``CrossAttention`` with its
``upcast_attention`` path). Its other methods get tensors of the same models: a float32 a method
builds without ``dtype=`` and puts beside such a tensor promotes it there (DTL510).

``cat``/``stack`` of masks and ids is most often integer data, where a float32 result is
harmless; a parameter counts as floating data only where the method itself pads, fills or
scales it with a python float (``F.pad(mask, (0, n), value=0.0)``, ``mask * -10000.0``), and a
factory as built to sit beside it only where it copies the parameter's device
(``torch.zeros(shape, device=mask.device)``) but not its dtype.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dtype_lint.facts.flow import lowp_evidence
from dtype_lint.facts.flow.library import dtype_constant

if TYPE_CHECKING:
    from dtype_lint.context import FileContext

# The float fills of padding/filling calls: ``F.pad(x, p, value=0.0)``, ``x.masked_fill(m, -1e4)``.
_FILL_CALLS = frozenset({"pad", "masked_fill", "masked_fill_", "fill_", "new_full", "full_like"})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)


def class_lowp_evidence(ctx: "FileContext", cls: cst.ClassDef) -> cst.CSTNode | None:
    """The first dtype test or upcast-and-cast-back (lowp_evidence's ``Evidence``) among the
    methods of ``cls``: the class is written for float16/bfloat16 tensors. Cached per class."""
    cache = ctx.__dict__.setdefault("_class_lowp_evidence", {})
    if id(cls) in cache:
        return cache[id(cls)]
    found = None
    for statement in getattr(cls.body, "body", ()):
        if not isinstance(statement, cst.FunctionDef):
            continue
        facts = lowp_evidence.facts_of(statement, lambda node: dtype_constant(ctx.names, node))
        nodes = sorted((evidence.node for evidence in facts.evidence.values()), key=ctx.source_order)
        if nodes and (found is None or ctx.source_order(nodes[0]) < ctx.source_order(found)):
            found = nodes[0]
    cache[id(cls)] = found
    return found


def floating_parameter(function: cst.FunctionDef, name: str) -> bool:
    """``name`` is padded, filled or scaled with a python float in ``function``: floating data."""
    for node in lowp_evidence.own_nodes(function.body):
        if isinstance(node, cst.Call):
            method = node.func.attr.value if isinstance(node.func, cst.Attribute) else \
                node.func.value if isinstance(node.func, cst.Name) else None
            if method not in _FILL_CALLS:
                continue
            receiver = node.func.value if isinstance(node.func, cst.Attribute) and method != "pad" else None
            positional = [arg.value for arg in node.args if arg.keyword is None]
            subject = receiver if receiver is not None else (positional[0] if positional else None)
            if not (isinstance(subject, cst.Name) and subject.value == name):
                continue
            fills = [arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value in ("value", "fill_value")]
            fills += positional[1:] if method not in ("pad",) else positional[2:]
            if any(_float_literal(fill) for fill in fills):
                return True
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _ARITHMETIC):
            sides = (node.left, node.right)
            if any(isinstance(side, cst.Name) and side.value == name for side in sides) and \
                    any(_float_literal(side) for side in sides):
                return True
    return False


def mirrors_device(call: cst.Call, name: str) -> bool:
    """``call`` copies ``name``'s device (``device=name.device``, ``.to(name.device)`` around it is
    the caller's business): the factory is built to sit beside ``name``."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            value = arg.value
            return isinstance(value, cst.Attribute) and value.attr.value == "device" \
                and isinstance(value.value, cst.Name) and value.value.value == name
    return False


def _float_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Float):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _float_literal(expr.expression)
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "float"


# Model bases a library loads in float16/bfloat16 on its documented path (a diffusers pipeline's
# ``torch_dtype=torch.float16``, transformers' ``from_pretrained(..., torch_dtype=...)``): the
# outputs of such a model's submodules are in that dtype there.
_LOW_MODEL_BASES = (("diffusers", "ModelMixin"), ("transformers", "PreTrainedModel"))
_TENSOR_ATTRIBUTES = frozenset({"shape", "device", "dtype", "size", "ndim", "dim", "chunk", "split", "view", "reshape"})


def low_model_class(ctx: "FileContext", cls: cst.ClassDef) -> str | None:
    """"diffusers"/"transformers" when ``cls`` derives (directly, or through a class of this file)
    from a model base that library loads in float16/bfloat16, imported from it (or, inside the
    library's own package, relatively)."""
    from dtype_lint.facts.lowp_contract import derived_library_base

    found = derived_library_base(ctx, cls, _LOW_MODEL_BASES)
    return found[0] if found else None


def constructor_attributes(cls: cst.ClassDef) -> frozenset:
    """The ``self.<name>`` attributes ``cls.__init__`` derives from a tensor it is constructed
    with (``self.mean, self.logvar = torch.chunk(parameters, 2, dim=1)``, then ``self.std =
    torch.exp(0.5 * self.logvar)``): their dtype is the one the constructor's caller gives."""
    init = next((s for s in getattr(cls.body, "body", ()) if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None:
        return frozenset()
    params = {p.name.value for p in (*init.params.posonly_params, *init.params.params, *init.params.kwonly_params)} - {"self"}
    nodes = list(lowp_evidence.own_nodes(init.body))
    tensors = {n.value.value for n in nodes if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name)
               and n.value.value in params and n.attr.value in _TENSOR_ATTRIBUTES}
    for node in nodes:
        if isinstance(node, cst.Call) and (_dotted(node.func) or "").startswith("torch."):
            tensors.update(arg.value.value for arg in node.args if arg.keyword is None
                           and isinstance(arg.value, cst.Name) and arg.value.value in params)
    if not tensors:
        return frozenset()
    derived: set[str] = set()
    for node in nodes:
        if not isinstance(node, cst.Assign):
            continue
        reads = [n for n in lowp_evidence.own_nodes(node.value)] + [node.value]
        if not any(isinstance(n, cst.Name) and n.value in tensors and not _attribute_name(n, node.value) for n in reads) \
                and not any(_self_attribute(n) in derived for n in reads):
            continue
        for target in node.targets:
            elements = target.target.elements if isinstance(target.target, (cst.Tuple, cst.List)) else (target.target,)
            for element in elements:
                element = getattr(element, "value", element)
                name = _self_attribute(element)
                if name is not None:
                    derived.add(name)
    return frozenset(derived)


def low_construction(ctx: "FileContext", cls: cst.ClassDef) -> tuple[cst.Call, str] | None:
    """(the call, why) where this file constructs ``cls`` from a submodule's output
    (``DiagonalGaussianDistribution(self.quant_conv(h))``, or a name bound to one) in a method of a
    model a library loads in float16/bfloat16, or of a class written for float16/bfloat16 callers."""
    cache = ctx.__dict__.setdefault("_low_construction", {})
    if id(cls) in cache:
        return cache[id(cls)]
    found = None
    for node in ctx.all_nodes:
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == cls.name.value):
            continue
        method = ctx.enclosing(node, cst.FunctionDef)
        owner = ctx.enclosing(method, cst.ClassDef) if method is not None else None
        if not isinstance(owner, cst.ClassDef) or owner is cls:
            continue
        if not any(arg.keyword is None and _submodule_output(arg.value, method) for arg in node.args):
            continue
        library = low_model_class(ctx, owner)
        if library is not None:
            found = (node, f"`{owner.name.value}` is a {library} model, loaded in float16/bfloat16 on the library's "
                           f"documented path, and gives it a submodule's output")
            break
        if class_lowp_evidence(ctx, owner) is not None:
            found = (node, f"`{owner.name.value}` is written for float16/bfloat16 tensors and gives it a submodule's output")
            break
    cache[id(cls)] = found
    return found


def _submodule_output(expr: cst.BaseExpression, method: cst.FunctionDef) -> bool:
    """``self.layer(...)``, or a name the method binds (only) to one."""
    if _self_call(expr):
        return True
    if not isinstance(expr, cst.Name):
        return False
    values = [node.value for node in lowp_evidence.own_nodes(method.body) if isinstance(node, cst.Assign)
              and any(isinstance(t.target, cst.Name) and t.target.value == expr.value for t in node.targets)]
    return bool(values) and all(_self_call(value) for value in values)


def _self_call(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
        and isinstance(expr.func.value, cst.Name) and expr.func.value.value == "self"


def _self_attribute(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _attribute_name(name: cst.Name, root: cst.CSTNode) -> bool:
    """``name`` is the ``attr`` of an attribute under ``root`` (``x.parameters``), not a read."""
    return any(isinstance(n, cst.Attribute) and n.attr is name for n in [root, *lowp_evidence.own_nodes(root)])


def _dotted(expr: cst.BaseExpression) -> str:
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return ""
    parts.append(expr.value)
    return ".".join(reversed(parts))

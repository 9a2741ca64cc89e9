"""diffusers' model contract: what a model loaded with ``torch_dtype`` runs in, and what it keeps.

``ModelMixin.from_pretrained(..., torch_dtype=torch.float16)`` (what every pipeline's
``from_pretrained(torch_dtype=...)`` does to its models) builds the model on the meta device and
loads the checkpoint's tensors into it in that dtype; it does not call ``model.to(torch_dtype)``
(diffusers' modeling_utils does so only for float8). Two consequences, both facts of the library:

- a submodule with weights (``nn.Linear``, ``nn.Conv2d``, a block of the file whose forward hands
  its input to such a layer first) runs in the loaded dtype, float16/bfloat16 on a pipeline's
  path, unless the class lists it in ``_keep_in_fp32_modules``;
- a buffer registered with ``persistent=False`` is not in the checkpoint, so it keeps the dtype
  ``__init__`` made it in: float32 when built with ``.float()`` or a default-dtype factory
  (huggingface/diffusers 75d7e5c: Latte's ``temp_pos_embed``).

A value the model's own code fixes at float32 (``x.float()`` before an interpolation) and hands
to such a submodule uncast fails there; a float32 buffer added to the hidden states promotes
them. This module only answers questions about the class's source; the dtypes come from the flow.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.lowp_contract import derived_library_base
from dtype_lint.facts.names import dotted_name

MODEL_BASE = "ModelMixin"
# torch.nn layers whose forward multiplies the input by their weight: a float32 input with
# float16/bfloat16 weights raises (norms are left out: diffusers keeps many of them affine-free).
WEIGHTED_LAYERS = frozenset(
    "Linear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d".split()
)


def file_classes(module: cst.Module) -> dict[str, cst.ClassDef]:
    """Module-level classes of the file by name."""
    return {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}


def is_model_class(ctx, node: cst.ClassDef) -> bool:
    """``node`` derives from diffusers' ``ModelMixin``, directly or through classes of the file
    (imported from diffusers, or relatively inside diffusers' own package)."""
    return derived_library_base(ctx, node, (("diffusers", MODEL_BASE),)) is not None


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None


def keep_in_fp32(cls: cst.ClassDef) -> tuple[str, ...]:
    """The strings of the class's ``_keep_in_fp32_modules`` (diffusers matches them as substrings
    of the parameter names)."""
    for statement in cls.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value == "_keep_in_fp32_modules" for t in small.targets):
                value = small.value
                if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
                    return tuple(el.value.evaluated_value for el in value.elements
                                 if isinstance(el.value, cst.SimpleString))
                return ("",)  # not a literal: any attribute may be kept in float32
    return ()


class _SelfAssigns(cst.CSTVisitor):
    """``self.<attr> = <value>`` in a method: attr -> values."""

    def __init__(self) -> None:
        self.found: dict[str, list[cst.BaseExpression]] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                self.found.setdefault(t.attr.value, []).append(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        t = node.target
        if node.value is not None and isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) \
                and t.value.value == "self":
            self.found.setdefault(t.attr.value, []).append(node.value)


def _self_assigns(cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
    init = _method(cls, "__init__")
    if init is None:
        return {}
    visitor = _SelfAssigns()
    init.visit(visitor)
    return visitor.found


def _torch_weighted(ctx, value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call):
        return False
    return any(q.startswith("torch.nn.") and q.rsplit(".", 1)[-1] in WEIGHTED_LAYERS
               for q in ctx.names.qualified_names(value.func))


def _first_use_is_weighted(ctx, cls: cst.ClassDef) -> bool:
    """The class's ``forward`` hands its first input, as given, to one of its own weighted torch
    layers before anything else touches it (``x = self.depthwise(x)``)."""
    forward = _method(cls, "forward")
    if forward is None:
        return False
    params = [*forward.params.posonly_params, *forward.params.params]
    if len(params) < 2:
        return False
    name = params[1].name.value
    layers = {attr for attr, values in _self_assigns(cls).items() if values and all(_torch_weighted(ctx, v) for v in values)}
    uses: list[cst.CSTNode] = []

    class FirstUse(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
            return False  # a binding, not a use

        def visit_Assign(self, node: cst.Assign) -> bool:
            # ``x_res = x``: an alias kept for a residual does not touch the input
            return not (isinstance(node.value, cst.Name) and node.value.value == name)

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name and not uses:
                uses.append(node)

        def visit_Call(self, node: cst.Call) -> bool:
            if uses:
                return False
            func = node.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self" \
                    and func.attr.value in layers and node.args and isinstance(node.args[0].value, cst.Name) \
                    and node.args[0].value.value == name:
                uses.append(node)
                return False
            return True

    forward.body.visit(FirstUse())
    return bool(uses) and isinstance(uses[0], cst.Call)


def weighted_class(ctx, name: str) -> bool:
    """A module class of this file whose forward runs its input through weights first, or one of
    another file of the project that holds such layers."""
    cls = file_classes(ctx.module).get(name)
    if cls is None:
        # a class of another file of the project that holds a layer with weights (the project
        # pass's summaries; none in a single-file check)
        worlds = getattr(ctx, "worlds", None)
        return worlds is not None and name in getattr(worlds, "weighted", ())
    return _first_use_is_weighted(ctx, cls)


def _config_tests(ctx, node: cst.CSTNode) -> set[tuple[str, str]]:
    """``(name, "value")`` for each ``if name == "value":`` whose body holds ``node``, ``name``
    spelled as an ``__init__`` parameter or as the config attribute diffusers'
    ``@register_to_config`` makes of it (``self.config.name``)."""
    found: set[tuple[str, str]] = set()
    child, parent = node, ctx.parent(node)
    while parent is not None and not isinstance(parent, cst.ClassDef):
        if isinstance(parent, cst.If) and child is parent.body:
            test = parent.test
            if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
                    and isinstance(test.comparisons[0].operator, cst.Equal) \
                    and isinstance(test.comparisons[0].comparator, cst.SimpleString):
                left = test.left
                name = left.value if isinstance(left, cst.Name) else (
                    left.attr.value if isinstance(left, cst.Attribute) and dotted_name(left.value) in ("self.config", "config")
                    else None)
                if name is not None:
                    found.add((name, test.comparisons[0].comparator.evaluated_value))
        child, parent = parent, ctx.parent(parent)
    return found


def weighted_submodule(ctx, cls: cst.ClassDef, func: cst.BaseExpression, at: cst.CSTNode,
                       origin: cst.CSTNode | None = None) -> str | None:
    """What the called ``func`` is, when it is a submodule with weights of the model ``cls``:
    ``self.<attr>`` assigned only weighted layers in ``__init__`` (and not kept in float32; only
    those built under the config setting that ``origin``, where the value was made, runs under), or a
    name the enclosing ``if isinstance(name, Block):`` says is a weighted block of the file.
    Returns a short description, else None."""
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        attr = func.attr.value
        if any(kept in attr for kept in keep_in_fp32(cls)):
            return None
        values = _self_assigns(cls).get(attr)
        if not values or _cast_somewhere(cls, attr):
            return None
        wanted = _config_tests(ctx, origin) if origin is not None else set()
        if wanted:
            # the value was made under ``if self.config.kind == "timestep":``: the submodule is
            # the one ``__init__`` builds under the same setting of that parameter
            values = [v for v in values if _config_tests(ctx, v) & wanted] or values
        for value in values:
            if _torch_weighted(ctx, value):
                continue
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and weighted_class(ctx, value.func.value):
                continue
            return None
        return f"`self.{attr}`"
    if isinstance(func, cst.Name) and not keep_in_fp32(cls):
        node = ctx.parent(at)
        while node is not None and not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            if isinstance(node, cst.If):
                block = _isinstance_of(node.test, func.value)
                if block is not None and weighted_class(ctx, block):
                    return f"`{func.value}` (a `{block}`)"
            node = ctx.parent(node)
    return None


def _cast_somewhere(cls: cst.ClassDef, attr: str) -> bool:
    """The class casts ``self.<attr>`` itself (``self.proj.float()``, ``self.proj.to(torch.float32)``):
    it keeps its own dtype, not the loaded one."""
    found: list[bool] = []

    class Casts(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("float", "to", "double", "half", "bfloat16", "type") \
                    and isinstance(func.value, cst.Attribute) and func.value.attr.value == attr \
                    and isinstance(func.value.value, cst.Name) and func.value.value.value == "self":
                found.append(True)

    cls.visit(Casts())
    return bool(found)


def _isinstance_of(test: cst.BaseExpression, name: str) -> str | None:
    """``isinstance(name, Block)`` (also as one side of an ``and``): ``Block``."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _isinstance_of(test.left, name) or _isinstance_of(test.right, name)
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "isinstance" \
            and len(test.args) == 2 and isinstance(test.args[0].value, cst.Name) \
            and test.args[0].value.value == name and isinstance(test.args[1].value, cst.Name):
        return test.args[1].value.value
    return None


def nonpersistent_buffers(cls: cst.ClassDef) -> dict[str, cst.Call]:
    """``self.register_buffer("name", value, persistent=False)`` in ``__init__``: name -> call."""
    init = _method(cls, "__init__")
    if init is None:
        return {}
    found: dict[str, cst.Call] = {}

    class Buffers(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "register_buffer"
                    and isinstance(func.value, cst.Name) and func.value.value == "self"):
                return
            positional = [a for a in node.args if a.keyword is None and not a.star]
            persistent = next((a for a in node.args if a.keyword is not None and a.keyword.value == "persistent"), None)
            if persistent is None and len(positional) >= 3:
                persistent = positional[2]
            if persistent is None or not (isinstance(persistent.value, cst.Name) and persistent.value.value == "False"):
                return
            if positional and isinstance(positional[0].value, cst.SimpleString) and len(positional) >= 2:
                found[positional[0].value.evaluated_value] = node

    init.visit(Buffers())
    return found


def buffer_value(call: cst.Call) -> cst.BaseExpression:
    """The tensor a ``register_buffer`` call stores."""
    return [a for a in call.args if a.keyword is None and not a.star][1].value

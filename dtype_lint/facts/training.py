"""The shape of a training script, read from names and structure alone.

Which calls, loops, ``with`` blocks, functions and classes a file has; which loops call
``backward``; which names hold an autocast context; whether the file uses PEFT adapters, a loss
scaler or a bf16 capability check. Shared by the autocast, scaler, loading and distributed rules
(DTL2xx/3xx/6xx/7xx) so each asks a question instead of re-walking the tree. Computed once per
file, on first use, by ``training_facts(ctx)``.

Everything here is syntactic: where a rule needs the dtype of a value at a point it asks the
dtype flow (``ctx.flow``) instead.
"""

from __future__ import annotations

import dataclasses

import re
from typing import Iterator

import libcst as cst

from dtype_lint.facts.amp import (
    AUTOCAST,
    DTYPE_NAMES,
    AutocastInfo,
    autocast_info,
    dtype_literal,
    is_grad_scaler,
    is_scaler_wrapper,
    scaler_wrapper_classes,
)
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts import config_values

DEFINITIONS = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# The same classes as a set, for the walks' inner loop: libcst's node classes are ABCs, whose
# ``isinstance`` goes through a Python-level ``__instancecheck__``; none has subclasses.
DEFINITION_TYPES = frozenset(DEFINITIONS)
LOOPS = (cst.For, cst.While)
# Whoever calls these handles loss scaling itself (accelerate, Lightning Fabric, DeepSpeed, apex).
FRAMEWORK_BACKWARD = ("accelerator.backward", "fabric.backward", "engine.backward", "model_engine.backward")
# Identifiers that show a loss scaler is in play even when its construction is elsewhere
# (timm's NativeScaler, apex's amp.scale_loss, a trainer's self.scaler set by a base class).
SCALER_WORDS = re.compile(r"scaler|scale_loss|loss_scale")
# Identifiers that show the script checks for bf16 support before relying on it.
BF16_GUARD_WORDS = re.compile(
    r"(bf16|bfloat16).*(support|availab|capab|require)|(support|availab|capab|require).*(bf16|bfloat16)"
    r"|get_device_capability|get_device_properties"
)
PEFT_CALLS = (
    "get_peft_model",
    "prepare_model_for_kbit_training",
    "prepare_model_for_int8_training",
    "add_adapter",
    "LoraConfig",
    "PeftModel",
    "inject_adapter_in_model",
)


# Fields that only ever hold whitespace, punctuation or comments: never worth descending into.
_SKIPPED_FIELDS = frozenset({
    "lpar", "rpar", "comma", "dot", "semicolon", "leading_lines", "lines_after_decorators", "header",
    "footer", "equal", "colon", "whitespace", "newline", "trailing_whitespace", "asynchronous",
})
# Nodes whose dataclass fields are not in source order: these fields come first in a walk.
_SOURCE_ORDER_FIRST = {
    cst.FunctionDef: ("decorators", "name", "params", "returns"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords"),
    cst.ExceptHandler: ("type", "name"),
    cst.IfExp: ("body", "test"),
    cst.Arg: ("keyword",),
}
_FIELDS: dict[type, tuple[str, ...]] = {}


def _node_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node class that can hold syntax, in source order; computed once per class."""
    fields = _FIELDS.get(kind)
    if fields is None:
        names = [
            name for name in kind.__dataclass_fields__
            # (libcst's slotted dataclasses list ``__slots__`` among their fields: a tuple of str)
            if name not in _SKIPPED_FIELDS and not name.startswith(("whitespace", "__"))
        ]
        first = _SOURCE_ORDER_FIRST.get(kind, ())
        fields = _FIELDS[kind] = tuple(first) + tuple(name for name in names if name not in first)
    return fields


class _IsNodeType(dict):
    """node class -> whether it is a libcst node, computed once per class
    (isinstance(value, cst.CSTNode) goes through ABCMeta and dominated the walks' cost)."""

    def __missing__(self, kind: type) -> bool:
        known = self[kind] = isinstance(kind, type) and issubclass(kind, cst.CSTNode)
        return known


_IS_NODE_TYPE = _IsNodeType()


class _ChildGetters(dict):
    """node class -> a function listing a node's syntax children, generated once per class from
    its fields (no loop over field names, no getattr by name: the walks' inner loop)."""

    def __missing__(self, kind: type):
        lines = ["def children(node):", "    found = []"]
        for name in _node_fields(kind):
            lines += [
                f"    value = node.{name}",
                "    kind = type(value)",
                "    if kind is list or kind is tuple:",
                "        found.extend(value)  # sequence fields hold only nodes",
                "    elif is_node[kind]:",
                "        found.append(value)",
            ]
        lines.append("    return found")
        namespace = {"is_node": _IS_NODE_TYPE}
        exec("\n".join(lines), namespace)  # noqa: S102 - field names of libcst's own classes
        getter = self[kind] = namespace["children"]
        return getter


CHILD_GETTERS = _ChildGetters()


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The syntax children of ``node`` (no whitespace or punctuation) in source order (the order
    libcst's visitors see them), read from its fields: much cheaper than ``node.children``, which
    rebuilds the node through a visitor. A new list, the caller's to keep or change."""
    return CHILD_GETTERS[type(node)](node)


def walk(node: cst.CSTNode, *, into_definitions: bool = False) -> Iterator[cst.CSTNode]:
    """``node`` and its descendants, pre-order in source order (as libcst's visitors see them);
    nested defs/classes/lambdas are yielded but not entered unless asked."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not into_definitions and current is not node and type(current) in DEFINITION_TYPES:
            continue
        stack.extend(reversed(child_nodes(current)))


def calls_in(node: cst.CSTNode, *, into_definitions: bool = False) -> Iterator[cst.Call]:
    for child in walk(node, into_definitions=into_definitions):
        if type(child) is cst.Call:  # (no subclasses; cheaper than the ABC's isinstance)
            yield child


def assigned_name(ctx, call: cst.Call) -> str | None:
    """``model`` in ``model = AutoModel.from_pretrained(...)``."""
    parent = ctx.parent(call)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        return dotted_name(parent.targets[0].target)
    if isinstance(parent, cst.AnnAssign):
        return dotted_name(parent.target)
    return None


def call_name(call: cst.Call) -> str:
    """The last name of what is called: ``backward`` for ``loss.backward()``, ``''`` if none."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


def receiver(call: cst.Call) -> cst.BaseExpression | None:
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def positional(call: cst.Call, index: int) -> cst.BaseExpression | None:
    plain = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    return plain[index] if index < len(plain) else None


def is_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def is_false(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def string_value(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def target_text(node: cst.BaseExpression) -> str | None:
    """``model`` / ``self.model`` for a Name or Attribute chain, else None."""
    return dotted_name(node)


def is_backward(call: cst.Call) -> bool:
    """``loss.backward()``, ``scaler.scale(loss).backward()``, ``torch.autograd.backward(...)``."""
    if call_name(call) != "backward":
        return False
    dotted = dotted_name(call.func) or ""
    return not any(dotted.endswith(name) for name in FRAMEWORK_BACKWARD)


def is_scaled_backward(call: cst.Call) -> bool:
    """``scaler.scale(loss).backward()``."""
    inner = receiver(call)
    return isinstance(inner, cst.Call) and call_name(inner) == "scale"


def steps_an_optimizer(calls: list[cst.Call]) -> bool:
    """Some call may apply gradients: an optimizer's ``step()`` (no positional argument but a
    closure: ``opt.step()``, ``opt.step(closure)`` on a name mentioning "opt"), a scaler's
    ``step(optimizer)``, or any call through a name mentioning an optimizer (``self.optimizer_step()``,
    ``torch.optim.AdamW(...)``). An EMA's ``ema.step(model.parameters())`` is none of these. Without
    one, a ``backward()`` only fills ``.grad`` for inspection (a gradient test), no weight changes."""
    for call in calls:
        dotted = (dotted_name(call.func) or "").lower()
        if "optim" in dotted:
            return True
        if call_name(call) != "step":
            continue
        owner = dotted.rsplit(".", 1)[0]
        if positional(call, 0) is None or "opt" in owner or "scaler" in owner:
            return True
    return False


class TrainingFacts:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        names = ctx.names
        self.calls: list[cst.Call] = []
        self.loops: list[cst.For | cst.While] = []
        self.withs: list[cst.With] = []
        self.functions: dict[str, list[cst.FunctionDef]] = {}
        self.classes: dict[str, cst.ClassDef] = {}
        # Simple assignments ``target = value`` by the target's dotted text, in program order.
        self.assignments: dict[str, list[tuple[cst.Assign, cst.BaseExpression]]] = {}
        self.identifiers: set[str] = set()
        for node in ctx.all_nodes:
            kind = type(node)  # exact type tests: libcst's classes are final, isinstance is slow on them
            if kind is cst.Call:
                self.calls.append(node)
            elif kind is cst.Name:
                self.identifiers.add(node.value.lower())
            elif kind is cst.Attribute:
                self.identifiers.add(node.attr.value.lower())
            elif kind in LOOPS:
                self.loops.append(node)
            elif kind is cst.With:
                self.withs.append(node)
            elif kind is cst.FunctionDef:
                self.functions.setdefault(node.name.value, []).append(node)
            elif kind is cst.ClassDef:
                self.classes.setdefault(node.name.value, node)
            elif kind is cst.Assign:
                for target in node.targets:
                    text = target_text(target.target)
                    if text is not None:
                        self.assignments.setdefault(text, []).append((node, node.value))
            elif kind is cst.AnnAssign and node.value is not None:
                text = target_text(node.target)
                if text is not None:
                    self.assignments.setdefault(text, []).append((node, node.value))
        # GradScaler constructions, and those of loss-scaler wrappers (timm's NativeScaler).
        # (every GRAD_SCALER name ends in ``GradScaler``, which a file must spell to reach it: a
        # file that does not is spared the walk of each class)
        wrappers = scaler_wrapper_classes(self.classes, names) if "GradScaler" in ctx.text else frozenset()
        self.scalers = [
            call for call in self.calls if is_grad_scaler(names, call) or is_scaler_wrapper(names, call, wrappers)
        ]
        self.uses_scaler = bool(self.scalers) or any(SCALER_WORDS.search(i) for i in self.identifiers)
        self.bf16_guarded = any(BF16_GUARD_WORDS.search(i) for i in self.identifiers)
        self.uses_peft = names.is_imported("peft") or any(call_name(c) in PEFT_CALLS for c in self.calls) or any(
            keyword(c, "peft_config") is not None for c in self.calls
        )
        self.uses_xla = names.is_imported("torch_xla")

    # -- autocast ---------------------------------------------------------------------------
    def autocast_of_expression(self, expr: cst.BaseExpression) -> AutocastInfo | None:
        """The autocast a ``with`` item opens: a call, or a name/attribute assigned one.

        ``ctx = nullcontext() if cpu else torch.autocast("cuda", dtype=ptdtype)`` (nanoGPT) opens
        an autocast on some runs only: its ``enabled`` is reported as unknown.
        """
        info = autocast_info(self.ctx.names, expr)
        if info is not None:
            return info
        if isinstance(expr, cst.Call):
            returned = self.returned_autocast(expr)
            if returned is not None:
                return returned
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
            return self._autocast_factory_call(expr)
        text = target_text(expr)
        if text is None:
            return None
        for _, value in reversed(self.assignments.get(text, [])):
            info = autocast_info(self.ctx.names, value)
            if info is not None:
                return info
            if isinstance(value, cst.IfExp):
                for branch in (value.body, value.orelse):
                    info = autocast_info(self.ctx.names, branch)
                    if info is not None:
                        return AutocastInfo(info.device, info.dtype, None, info.node)
        return None

    def returned_autocast(self, call: cst.Call) -> AutocastInfo | None:
        """``with amp_context():`` / ``with self.autocast_smart_context_manager():`` where the one
        function of this file of that name returns an autocast context on every ``return``
        (``return torch.autocast(device_type=..., dtype=amp_dtype, enabled=use_amp)``)."""
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            name = func.attr.value
        elif isinstance(func, cst.Name):
            name = func.value
        else:
            return None
        definitions = self.functions.get(name, [])
        if len(definitions) != 1:
            return None
        returns = [node.value for node in walk(definitions[0]) if isinstance(node, cst.Return)]
        infos = [autocast_info(self.ctx.names, value) if value is not None else None for value in returns]
        if not infos or any(info is None for info in infos):
            return None
        return infos[0]

    def _autocast_factory_call(self, call: cst.Call) -> AutocastInfo | None:
        """``amp_autocast()`` where ``amp_autocast = partial(torch.autocast, "cuda", dtype=...)``
        or ``= torch.autocast if amp else nullcontext`` (timm's train.py): the autocast the call
        opens, with the node of the call in the ``with``."""
        for _, value in reversed(self.assignments.get(call.func.value, [])):
            if isinstance(value, cst.Call) and self.ctx.names.matches(value.func, "functools.partial") and value.args:
                target = value.args[0]
                if target.keyword is None and self.ctx.names.matches(target.value, *AUTOCAST):
                    merged = cst.Call(func=target.value, args=(*value.args[1:], *call.args))
                    info = autocast_info(self.ctx.names, merged)
                    if info is not None:
                        return dataclasses.replace(info, node=call)
            if isinstance(value, cst.IfExp):
                for branch in (value.body, value.orelse):
                    if self.ctx.names.matches(branch, *AUTOCAST):
                        info = autocast_info(self.ctx.names, cst.Call(func=branch, args=call.args))
                        if info is not None:
                            return dataclasses.replace(info, enabled=None, node=call)
        return None

    def autocast_of_with(self, node: cst.With) -> AutocastInfo | None:
        for item in node.items:
            info = self.autocast_of_expression(item.item)
            if info is not None:
                return info
        return None

    def autocast_withs(self) -> list[tuple[cst.With, AutocastInfo]]:
        found = []
        for node in self.withs:
            info = self.autocast_of_with(node)
            if info is not None:
                found.append((node, info))
        return found

    def enclosing_autocasts(self, node: cst.CSTNode) -> list[tuple[cst.With, AutocastInfo]]:
        """The autocast ``with`` blocks around ``node`` in its function, innermost first."""
        found = []
        current = self.ctx.parent(node)
        while current is not None and not isinstance(current, DEFINITIONS):
            if isinstance(current, cst.With):
                info = self.autocast_of_with(current)
                if info is not None:
                    found.append((current, info))
            current = self.ctx.parent(current)
        return found

    # -- loops ------------------------------------------------------------------------------
    def backward_calls(self, node: cst.CSTNode) -> list[cst.Call]:
        return [call for call in calls_in(node) if is_backward(call)]

    def local_callees(self, node: cst.CSTNode) -> list[cst.FunctionDef]:
        """Functions and methods of this file called (by simple or ``self.`` name) inside ``node``."""
        found: list[cst.FunctionDef] = []
        for call in calls_in(node):
            func = call.func
            name = None
            if isinstance(func, cst.Name):
                name = func.value
            elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
                name = func.attr.value
            for definition in self.functions.get(name or "", []):
                if definition not in found:
                    found.append(definition)
        return found

    def enclosing_loop(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        current = self.ctx.parent(node)
        while current is not None and not isinstance(current, DEFINITIONS):
            if isinstance(current, LOOPS):
                return current
            current = self.ctx.parent(current)
        return None

    # -- values -----------------------------------------------------------------------------
    def dtype_choices(self, expr: cst.BaseExpression | None, depth: int = 0) -> set[str]:
        """The literal dtypes ``expr`` may hold, following assignments of a name in this file.

        ``torch.float16 if args.fp16 else torch.float32`` gives both; a dict of dtypes indexed
        by a config string gives every value; an unknown part yields nothing for that part.
        """
        if expr is None or depth > 4:
            return set()
        literal = dtype_literal(self.ctx.names, expr)
        if literal is not None:
            return {literal}
        if isinstance(expr, cst.IfExp):
            return self.dtype_choices(expr.body, depth + 1) | self.dtype_choices(expr.orelse, depth + 1)
        if isinstance(expr, cst.Call) and call_name(expr) == "getattr" and len(expr.args) == 2 \
                and self.ctx.names.resolve_dotted(dotted_name(expr.args[0].value) or "") == ("torch",):
            # ``getattr(torch, name)``: the dtype names the string may hold in this file. (Not a
            # config setting's: an autocast dtype read from a config is the run's own choice; the
            # flow still follows it, for what a bf16 model then meets.)
            names = self.string_choices(expr.args[1].value, depth + 1, config=False)
            return {DTYPE_NAMES[f"torch.{name}"] for name in names if f"torch.{name}" in DTYPE_NAMES}
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Dict):
            # nanoGPT: ``{'float32': torch.float32, 'bfloat16': torch.bfloat16}[dtype]``; when
            # the key's string values are known only their entries count.
            keys = self.string_choices(expr.slice[0].slice.value) if len(expr.slice) == 1 and isinstance(
                expr.slice[0].slice, cst.Index
            ) else set()
            return {
                choice
                for element in expr.value.elements
                if isinstance(element, cst.DictElement)
                and (not keys or string_value(element.key) in keys)
                for choice in self.dtype_choices(element.value, depth + 1)
            }
        text = target_text(expr)
        if text is not None and text in self.assignments:
            found: set[str] = set()
            for _, value in self.assignments[text]:
                found |= self.dtype_choices(value, depth + 1)
            return found
        default = parameter_default(self.ctx, expr)
        if default is not None:
            # ``def __init__(self, precision=torch.bfloat16)``: what runs when no caller says otherwise.
            return self.dtype_choices(default, depth + 1)
        return set()

    def dtype_from_default(self, expr: cst.BaseExpression | None, depth: int = 0) -> bool:
        """``expr``'s dtype comes (on some path) from a parameter's default: only the
        configuration that runs when no caller passes another one."""
        if expr is None or depth > 4:
            return False
        if isinstance(expr, cst.IfExp):
            return self.dtype_from_default(expr.body, depth + 1) or self.dtype_from_default(expr.orelse, depth + 1)
        text = target_text(expr)
        if text is not None and text in self.assignments:
            return any(self.dtype_from_default(value, depth + 1) for _, value in self.assignments[text])
        return parameter_default(self.ctx, expr) is not None

    def autocast_dtype_defaulted(self, info: AutocastInfo) -> bool:
        call = info.node
        if call is None or not self.ctx.names.matches(call.func, *AUTOCAST):
            return False
        argument = keyword(call, "dtype")
        return self.dtype_from_default(argument if argument is not None else positional(call, 1))

    def string_choices(self, expr: cst.BaseExpression, depth: int = 0, config: bool = True) -> set[str]:
        """The string literals ``expr`` may hold (empty when any assignment is not one);
        ``config``: also the strings the config settings it reads may hold."""
        if depth > 4:
            return set()
        value = string_value(expr)
        if value is not None:
            return {value}
        if isinstance(expr, cst.Call) and call_name(expr) == "device" and len(expr.args) == 1:
            return self.string_choices(expr.args[0].value, depth + 1, config)  # torch.device("cpu")
        if isinstance(expr, cst.IfExp):
            body, orelse = self.string_choices(expr.body, depth + 1, config), self.string_choices(expr.orelse, depth + 1, config)
            return body | orelse if body and orelse else set()
        text = target_text(expr)
        if text is None or text not in self.assignments:
            # ``config["training"]["mixed_precision"]``: the strings the config files give the key
            settings = config_values.settings_of(self.ctx, expr) if config else []
            return {s.value for s in settings if isinstance(s.value, str)} if settings and all(
                isinstance(s.value, str) for s in settings) else set()
        found: set[str] = set()
        for _, value_node in self.assignments[text]:
            choices = self.string_choices(value_node, depth + 1, config)
            if not choices:
                return set()
            found |= choices
        return found

    def autocast_dtypes(self, info: AutocastInfo) -> tuple[set[str], str]:
        """The dtypes an autocast may run at, and where that comes from (for messages).

        An explicit ``dtype=`` is followed through assignments (empty set: unknown); without
        one, the device's default (CUDA float16, CPU bfloat16) applies.
        """
        call = info.node
        argument = None
        if call is not None and self.ctx.names.matches(call.func, *AUTOCAST):
            argument = keyword(call, "dtype")
            if argument is None:
                argument = positional(call, 1)
        if argument is not None:
            choices = self.dtype_choices(argument)
            literal = dtype_literal(self.ctx.names, argument)
            source = f"`dtype={self.ctx.code_for(argument)}`"
            if literal is None and choices:
                source += f" ({' or '.join(sorted(choices))})"
            return choices, source
        if info.dtype is not None:
            # explicit, but not in ``info.node``: ``partial(torch.autocast, device_type=device.type,
            # dtype=torch.bfloat16)`` called as ``amp_autocast()`` (timm's train.py)
            return {info.dtype}, f"`dtype=torch.{info.dtype}`"
        if info.device is None or info.effective_dtype is None:
            return set(), "the framework's setting"  # an unknown device has no known default
        return {info.effective_dtype}, f"the {info.device.upper()} default"


def parameter_default(ctx, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The default of the parameter ``expr`` names, in the function it is used in."""
    if not isinstance(expr, cst.Name):
        return None
    function = ctx.enclosing(expr, cst.FunctionDef)
    if function is None:
        return None
    for param in (*function.params.params, *function.params.kwonly_params):
        if param.name.value == expr.value:
            return param.default
    return None


def trains_only_requires_grad(ctx, optimizer: cst.Call) -> bool:
    """The optimizer is handed only the parameters that require grad
    (``[p for p in model.parameters() if p.requires_grad]``, ``filter(lambda p: p.requires_grad,
    ...)``), directly or through a name: the frozen part of a mixed-dtype model (a float16 base
    under float32 adapters) is then not trained."""
    params = keyword(optimizer, "params")
    if params is None:
        positional = [arg for arg in optimizer.args if arg.keyword is None and not arg.star]
        params = positional[0].value if positional else None
    if params is None:
        return False
    candidates = [params]
    name = target_text(params)
    if name is not None:
        candidates += [value for _, value in training_facts(ctx).assignments.get(name, ())]
    return any(
        type(node) is cst.Attribute and node.attr.value == "requires_grad"
        for candidate in candidates
        for node in walk(candidate, into_definitions=True)
    )


def training_facts(ctx) -> TrainingFacts:
    facts = getattr(ctx, "_training_facts", None)
    if facts is None:
        facts = TrainingFacts(ctx)
        ctx._training_facts = facts
    return facts


"""The GradScaler protocol of a file: which scaler guards which optimizer, in what order.

Computed once per file (``ctx.scaler``, lazily) and shared by the GradScaler rules (DTL301,
DTL303..DTL307). It is a list of *events*, the calls that make up the AMP training step, in
source order, each placed in its control structure:

    SCALED_BACKWARD  ``scaler.scale(loss).backward()``         scaler="scaler"
                     (also ``scaled = scaler.scale(loss)`` ... ``scaled.backward()`` in one function)
    BACKWARD         ``loss.backward()``, ``accelerator.backward(loss)``, ``torch.autograd.backward``
    UNSCALE          ``scaler.unscale_(opt)``                  scaler, optimizer="opt"
    STEP             ``scaler.step(opt)``                      scaler, optimizer
    UPDATE           ``scaler.update()``                       scaler
    OPTIMIZER_STEP   ``opt.step()`` (receiver not a scaler)    optimizer (may be a scheduler:
                                                               ask ``is_optimizer``)
    ZERO_GRAD        ``opt.zero_grad()``                       optimizer
    CLIP             ``torch.nn.utils.clip_grad_norm_(...)`` / ``clip_grad_value_`` (resolved
                     through imports; ``accelerator.clip_grad_norm_`` is not one)

Receivers are compared by their source text (``scaler``, ``self.scaler``, ``self.optimizer``).

Control structure, per event:
- ``function``: the enclosing def (or None at module level); events never cross functions.
- ``loops``: the For/While statements around it inside that function, outermost first. One loop
  body is one training iteration: ``facts.iteration(event)`` gives the events of the same
  function inside the event's innermost loop (or its whole function when it is in no loop), and
  ``facts.repeated(event, loop)`` says whether an event runs several times per iteration of
  ``loop`` (it sits in a nested loop, like nanoGPT's micro-step backward).
- ``guards``: the branches it sits in, ``((id(if_node), "body"), (id(inner_if), "else"), ...)``;
  ``ScalerFacts.exclusive(a, b)`` is True when two events sit in different branches of one
  ``if``/``match``/``try`` handler and so never both run in one pass.

Scalers: a receiver is a scaler when the file binds it to a ``GradScaler(...)`` call (every
import spelling), or when its last name part is ``scaler`` / ends in ``_scaler`` and the file
never binds it to some other call (``scaler = StandardScaler()`` stays out). ``binding(name)``
gives the construction (line, literal ``enabled``). Optimizers: bound to a ``torch.optim`` (or
any ``*.optim.*`` / ``*Adam*``/``*SGD*``...) construction, passed to ``scaler.step``/``unscale_``,
or named like one (``optimizer``, ``opt_g``, ``self.optim``), and never like a scheduler.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Iterator

import libcst as cst

from dtype_lint.facts.amp import _argument, is_grad_scaler, literal_bool
from dtype_lint.facts.names import ImportTable, dotted_name
from dtype_lint.facts.training import calls_in, child_nodes

CLIP_FUNCTIONS = tuple(
    f"torch.nn.utils{module}.{name}"
    for module in ("", ".clip_grad")
    for name in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm")
)
SCALER_NAME = re.compile(r"(^|_)scaler$")
OPTIMIZER_NAME = re.compile(r"^(\w+_)?(opt|optim|optimizer|optimiser)s?(_\w+|[A-Z0-9]\w*)?$")
SCHEDULER_NAME = re.compile(r"sched|lr_|warmup|ema|swa", re.IGNORECASE)
OPTIMIZER_CLASS = re.compile(r"(Adam|SGD|RMSprop|Adagrad|Adadelta|Lion|Adafactor|LAMB|Lamb|LBFGS|Sophia|Muon|Optimizer)")


class Kind(enum.Enum):
    SCALED_BACKWARD = "scaled_backward"
    BACKWARD = "backward"
    UNSCALE = "unscale"
    STEP = "step"
    UPDATE = "update"
    OPTIMIZER_STEP = "optimizer_step"
    ZERO_GRAD = "zero_grad"
    CLIP = "clip"


@dataclasses.dataclass(frozen=True, eq=False)
class Event:
    kind: Kind
    call: cst.Call = dataclasses.field(repr=False)
    statement: cst.SimpleStatementLine = dataclasses.field(repr=False)
    order: int  # position in source order over the whole file
    scaler: str | None  # the scaler's source text, for scaler events
    optimizer: str | None  # the optimizer's source text, when the call names one
    function: cst.CSTNode | None = dataclasses.field(repr=False)  # the enclosing FunctionDef (or ClassDef body), None at module level
    loops: tuple[cst.CSTNode, ...] = dataclasses.field(repr=False)  # enclosing For/While inside ``function``, outermost first
    guards: tuple[tuple[int, str], ...]  # enclosing branches, outermost first
    # For an event seen through a call (``facts.call_events``): the callee's own event, in the
    # file's other function (or None for a callable that clips by its name alone).
    via: "Event | None" = dataclasses.field(default=None, repr=False)
    through_call: bool = False

    @property
    def loop(self) -> cst.CSTNode | None:
        return self.loops[-1] if self.loops else None


@dataclasses.dataclass(frozen=True)
class ScalerBinding:
    target: str  # source text of the assignment target: "scaler", "self.scaler"
    call: cst.Call = dataclasses.field(repr=False)
    line: int
    enabled: bool | None  # literal ``enabled=``; None when it depends on a run-time value


class ScalerFacts:
    def __init__(self, events: list[Event], bindings: dict[str, list[ScalerBinding]], other_bound: set[str],
                 optimizer_bound: set[str]) -> None:
        self.events: tuple[Event, ...] = tuple(events)
        self._by_call = {id(event.call): event for event in events}
        self._bindings = bindings
        self._other_bound = other_bound
        self._optimizer_bound = set(optimizer_bound)
        self.module: cst.Module | None = None
        # Events seen through calls to the file's own functions (see ``_call_events``); only the
        # rules that ask for them (``iteration(..., through_calls=True)``) see them.
        self.call_events: tuple[Event, ...] = ()
        for event in events:
            if event.kind in (Kind.STEP, Kind.UNSCALE) and event.optimizer:
                self._optimizer_bound.add(event.optimizer)

    # -- who is who -----------------------------------------------------------------------------
    def is_scaler(self, text: str | None) -> bool:
        if not text:
            return False
        if text in self._bindings:
            return True
        return bool(SCALER_NAME.search(text.rsplit(".", 1)[-1])) and text not in self._other_bound

    def binding(self, scaler: str) -> ScalerBinding | None:
        """The first ``GradScaler(...)`` construction bound to ``scaler`` in this file."""
        found = self._bindings.get(scaler)
        return found[0] if found else None

    def is_disabled(self, scaler: str) -> bool:
        """Every construction of ``scaler`` in the file says ``enabled=False``: a no-op scaler."""
        found = self._bindings.get(scaler)
        return bool(found) and all(binding.enabled is False for binding in found)

    def describe(self, scaler: str) -> str:
        """"`scaler` (GradScaler line 12)" for messages; without the line when not bound here."""
        binding = self.binding(scaler)
        return f"`{scaler}` (GradScaler line {binding.line})" if binding else f"`{scaler}`"

    def is_optimizer(self, text: str | None) -> bool:
        if not text:
            return False
        last = text.rsplit(".", 1)[-1]
        if SCHEDULER_NAME.search(last):
            return False
        return text in self._optimizer_bound or bool(OPTIMIZER_NAME.match(last))

    def guarded_optimizers(self, scaler: str) -> tuple[str, ...]:
        """The optimizers ``scaler.step(...)`` steps anywhere in the file, in order of first use."""
        seen: list[str] = []
        for event in self.events:
            if event.kind is Kind.STEP and event.scaler == scaler and event.optimizer not in seen:
                seen.append(event.optimizer)
        return tuple(seen)

    def scalers(self) -> tuple[str, ...]:
        """Every scaler the file constructs or uses, in order of first appearance."""
        seen: list[str] = []
        for name in self._bindings:
            seen.append(name)
        for event in self.events:
            if event.scaler and event.scaler not in seen:
                seen.append(event.scaler)
        return tuple(seen)

    # -- where and when -------------------------------------------------------------------------
    def event_for(self, call: cst.Call) -> Event | None:
        return self._by_call.get(id(call))

    def iteration(
        self, event: Event, loop: cst.CSTNode | None | str = "innermost", *, through_calls: bool = False
    ) -> tuple[Event, ...]:
        """Events of ``event``'s function inside ``loop`` (default: its innermost loop; None: the
        whole function body), in source order; with ``through_calls``, also the events of the
        file's own functions it calls (``call_events``)."""
        if loop == "innermost":
            loop = event.loop
        pool = self.events_through_calls() if through_calls else self.events
        return tuple(
            other
            for other in pool
            if other.function is event.function and (loop is None or loop in other.loops)
        )

    def events_through_calls(self) -> tuple[Event, ...]:
        if not self.call_events:
            return self.events
        return tuple(sorted(self.events + self.call_events, key=lambda event: event.order))

    @staticmethod
    def repeated(event: Event, loop: cst.CSTNode | None) -> bool:
        """``event`` runs in a loop nested inside ``loop`` (None: the function body)."""
        if loop is None:
            return bool(event.loops)
        return bool(event.loops) and event.loops[-1] is not loop

    @staticmethod
    def exclusive(a: Event, b: Event) -> bool:
        """``a`` and ``b`` sit in different branches of one if/match/try: never both in one pass."""
        for guard_a, guard_b in zip(a.guards, b.guards):
            if guard_a == guard_b:
                continue
            return guard_a[0] == guard_b[0]
        return False

    def function_calls_scale(self, function: cst.CSTNode | None, scaler: str) -> bool:
        """Whether ``scaler.scale(...)`` is called anywhere in ``function`` (None: the module)."""
        return any(
            event.kind is Kind.SCALED_BACKWARD and event.scaler == scaler and event.function is function
            for event in self.events
        ) or scaler in _scale_receivers(function if function is not None else self.module or cst.Module([]))


# -- building ----------------------------------------------------------------------------------
def _scale_receivers(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()
    for call in calls_in(node, into_definitions=True):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "scale":
            text = _text(call.func.value)
            if text:
                found.add(text)
    return found


def _text(node: cst.BaseExpression) -> str | None:
    return dotted_name(node)


def _calls(statement: cst.CSTNode) -> list[cst.Call]:
    """Calls of one simple statement in evaluation-ish (pre-)order, skipping lambdas.

    A field walk rather than a libcst visitor: visitors rebuild every node they pass.
    """
    calls: list[cst.Call] = []
    stack: list[cst.CSTNode] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Lambda):
            continue
        if isinstance(node, cst.Call):
            calls.append(node)
        stack.extend(reversed(child_nodes(node)))
    return calls


class _Builder:
    def __init__(self, names: ImportTable) -> None:
        self.names = names
        self.raw: list[tuple] = []  # (call, statement, function, loops, guards)
        self.bindings: dict[str, list[ScalerBinding]] = {}
        self.other_bound: set[str] = set()
        self.optimizer_bound: set[str] = set()
        self.scaled_names: dict[tuple[int, str], str] = {}  # (id(function), name) -> scaler
        self.line_of = None  # node -> its first line (positions are computed only when needed)

    def statements(self, body, function, loops, guards) -> None:
        for statement in body:
            self.statement(statement, function, loops, guards)

    def block(self, block, function, loops, guards) -> None:
        if isinstance(block, cst.IndentedBlock):
            self.statements(block.body, function, loops, guards)
        elif isinstance(block, cst.SimpleStatementSuite):
            self.simple(block, block, function, loops, guards)

    def statement(self, statement, function, loops, guards) -> None:
        if isinstance(statement, cst.SimpleStatementLine):
            self.simple(statement, statement, function, loops, guards)
        elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            self.block(statement.body, statement, (), ())
        elif isinstance(statement, cst.If):
            self.block(statement.body, function, loops, guards + ((id(statement), "body"),))
            if statement.orelse is not None:
                branch = guards + ((id(statement), "else"),)
                if isinstance(statement.orelse, cst.If):
                    self.statement(statement.orelse, function, loops, branch)
                else:
                    self.block(statement.orelse.body, function, loops, branch)
        elif isinstance(statement, (cst.For, cst.While)):
            self.block(statement.body, function, loops + (statement,), guards)
            if statement.orelse is not None:
                self.block(statement.orelse.body, function, loops, guards)
        elif isinstance(statement, cst.With):
            self.block(statement.body, function, loops, guards)
        elif isinstance(statement, (cst.Try, cst.TryStar)):
            body_guard = guards + ((id(statement), "body"),)
            self.block(statement.body, function, loops, body_guard)
            for index, handler in enumerate(statement.handlers):
                self.block(handler.body, function, loops, guards + ((id(statement), f"handler{index}"),))
            if statement.orelse is not None:
                self.block(statement.orelse.body, function, loops, body_guard)
            if statement.finalbody is not None:
                self.block(statement.finalbody.body, function, loops, guards)
        elif isinstance(statement, cst.Match):
            for index, case in enumerate(statement.cases):
                self.block(case.body, function, loops, guards + ((id(statement), f"case{index}"),))

    def simple(self, statement, container, function, loops, guards) -> None:
        for small in container.body:
            if isinstance(small, (cst.Assign, cst.AnnAssign)):
                self.binding(small)
                self.scaled_loss(small, function)
        for call in _calls(container):
            self.raw.append((call, statement, function, loops, guards))

    def scaled_loss(self, node: cst.Assign | cst.AnnAssign, function) -> None:
        """``scaled = scaler.scale(loss)``: a later ``scaled.backward()`` is a scaled backward."""
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        value = node.value
        if (
            len(targets) == 1
            and isinstance(targets[0], cst.Name)
            and isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "scale"
        ):
            receiver = _text(value.func.value)
            if receiver is not None:
                self.scaled_names[(id(function), targets[0].value)] = receiver

    def binding(self, node: cst.Assign | cst.AnnAssign) -> None:
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        value = node.value
        if value is None:
            return
        candidates = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
        for target in targets:
            text = _text(target)
            if text is None:
                continue
            for candidate in candidates:
                if not isinstance(candidate, cst.Call):
                    continue
                if is_grad_scaler(self.names, candidate):
                    self.bindings.setdefault(text, []).append(self._scaler_binding(text, candidate))
                    continue
                callee = _text(candidate.func) or ""
                qualified = self.names.qualified_names(candidate.func)
                if any(".optim." in q or q.startswith("torch.optim") for q in qualified) or OPTIMIZER_CLASS.search(
                    callee.rsplit(".", 1)[-1]
                ):
                    self.optimizer_bound.add(text)
                self.other_bound.add(text)

    def _scaler_binding(self, target: str, call: cst.Call) -> ScalerBinding:
        qualified = self.names.matches(call.func, "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler") or ""
        # torch.amp.GradScaler(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled)
        position = 5 if qualified else 4
        enabled_node = _argument(call, "enabled", position)
        enabled = True if enabled_node is None else literal_bool(enabled_node)
        return ScalerBinding(target, call, self.line_of(call), enabled)


def _classify(builder: _Builder, facts_scaler, call: cst.Call, function=None) -> tuple[Kind, str | None, str | None] | None:
    names = builder.names
    func = call.func
    if names.matches(func, *CLIP_FUNCTIONS):
        return Kind.CLIP, None, None
    if names.matches(func, "torch.autograd.backward"):
        return Kind.BACKWARD, None, None
    if not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    receiver = func.value
    receiver_text = _text(receiver)
    first = call.args[0].value if call.args and not call.args[0].star and call.args[0].keyword is None else None
    first_text = _text(first) if first is not None else None
    if method == "backward":
        if (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Attribute)
            and receiver.func.attr.value == "scale"
            and facts_scaler(_text(receiver.func.value))
        ):
            return Kind.SCALED_BACKWARD, _text(receiver.func.value), None
        scaled_by = builder.scaled_names.get((id(function), receiver_text or ""))
        if scaled_by is not None and facts_scaler(scaled_by):
            return Kind.SCALED_BACKWARD, scaled_by, None
        if receiver_text in ("self", "super"):
            return None
        return Kind.BACKWARD, None, None
    if facts_scaler(receiver_text):
        if method == "step" and first_text:
            return Kind.STEP, receiver_text, first_text
        if method == "unscale_" and first_text:
            return Kind.UNSCALE, receiver_text, first_text
        if method == "update":
            return Kind.UPDATE, receiver_text, None
        return None
    if method == "step" and receiver_text:
        return Kind.OPTIMIZER_STEP, None, receiver_text
    if method == "zero_grad" and receiver_text:
        return Kind.ZERO_GRAD, None, receiver_text
    return None


def analyze(ctx) -> ScalerFacts:
    """The scaler facts of the file behind ``ctx`` (a FileContext)."""
    builder = _Builder(ctx.names)
    builder.line_of = lambda node: ctx.position(node).start.line
    builder.statements(ctx.module.body, None, (), ())
    probe = ScalerFacts([], builder.bindings, builder.other_bound, builder.optimizer_bound)
    events: list[Event] = []
    for order, (call, statement, function, loops, guards) in enumerate(builder.raw):
        classified = _classify(builder, probe.is_scaler, call, function)
        if classified is None:
            continue
        kind, scaler, optimizer = classified
        events.append(Event(kind, call, statement, order, scaler, optimizer, function, loops, guards))
    facts = ScalerFacts(events, builder.bindings, builder.other_bound, builder.optimizer_bound)
    facts.module = ctx.module
    if any(kind is Kind.SCALED_BACKWARD for kind in (event.kind for event in events)):
        facts.call_events = tuple(_call_events(ctx, builder, events))
    return facts


# The protocol steps a call to one of the file's functions stands for. UPDATE/ZERO_GRAD do not
# change what a clip sees and are ignored; a callee mixing several steps is not summarised.
_SUMMARISED = (Kind.SCALED_BACKWARD, Kind.UNSCALE, Kind.STEP, Kind.CLIP)
# A callable the program clips with, known by its name only (``self.grad_clip_fn(params)``,
# ``clip_fn(model.parameters())``); framework clips that unscale first are not ones.
_CLIPPING_NAME = re.compile(r"clip", re.IGNORECASE)
_SELF_UNSCALING = ("accelerator", "fabric", "trainer", "engine", "deepspeed", "model_engine")


def _summary(function: cst.CSTNode, events: list[Event]) -> Event | None:
    """The one protocol step ``function`` performs: an unscale anywhere wins (what follows it sees
    true gradients), else its single kind of step; None when it does none or several."""
    own = [event for event in events if event.function is function and event.kind in _SUMMARISED]
    unscale = next((event for event in own if event.kind is Kind.UNSCALE), None)
    if unscale is not None:
        return unscale
    kinds = {event.kind for event in own}
    return own[0] if len(kinds) == 1 else None


def _clips_by_name(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    if not isinstance(name, str) or not _CLIPPING_NAME.search(name):
        return False
    receiver = _text(func.value) if isinstance(func, cst.Attribute) else None
    if receiver and receiver.rsplit(".", 1)[-1] in _SELF_UNSCALING:
        return False
    # It clips gradients: its name says so, or it is given a module's parameters.
    if "grad" in name.lower():
        return True
    return any(
        isinstance(arg.value, cst.Call) and isinstance(arg.value.func, cst.Attribute)
        and arg.value.func.attr.value == "parameters"
        for arg in call.args
    )


def _call_events(ctx, builder: _Builder, events: list[Event]) -> list[Event]:
    """Calls to the file's own functions that perform one protocol step, as events of the caller."""
    from dtype_lint.facts.callees import FunctionIndex

    index = FunctionIndex(ctx.module, ctx.names)
    classified = {id(event.call) for event in events}
    found: list[Event] = []
    for order, (call, statement, function, loops, guards) in enumerate(builder.raw):
        if id(call) in classified or function is None:
            continue
        callee = index.resolve(call)
        if callee is not None:
            if callee is function:
                continue
            step = _summary(callee, events)
            if step is None:
                continue
            found.append(Event(step.kind, call, statement, order, step.scaler, step.optimizer, function, loops,
                               guards, via=step, through_call=True))
        elif _clips_by_name(call) and not builder.names.qualified_names(call.func):
            found.append(Event(Kind.CLIP, call, statement, order, None, None, function, loops, guards,
                               through_call=True))
    return found


def iter_events(facts: ScalerFacts, *kinds: Kind) -> Iterator[Event]:
    for event in facts.events:
        if event.kind in kinds:
            yield event


__all__ = ["Event", "Kind", "ScalerBinding", "ScalerFacts", "analyze", "iter_events"]

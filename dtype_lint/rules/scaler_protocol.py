"""The GradScaler protocol within one training iteration: DTL303, DTL304, DTL305.

The order of ``scale(loss).backward()``, ``unscale_``, clipping, ``step`` and ``update`` comes from
the scaler facts (``ctx.scaler``, ``dtype_lint.facts.scaler``): one loop body is one iteration,
events in different branches of one ``if`` never both run, events in a nested loop (micro-steps)
run several times. A scaler constructed with a literal ``enabled=False`` is a no-op and is skipped.
"""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from dtype_lint.facts import branch_conditions, precision_sources
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.scaler import Event, Kind, ScalerFacts
from dtype_lint.facts.training import walk
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule


def _is_lone_expression(event: Event) -> bool:
    """The event's call is the whole statement (``scaler.step(opt)`` on its own line)."""
    statement = event.statement
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and statement.body[0].value is event.call
    )


def _callee(event: Event) -> str:
    func = event.call.func
    return func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "clip")


# A scaler is a receiver whose last name part ends in "scaler" or one bound to a GradScaler call
# (whose qualified name ends in the word "GradScaler"): see dtype_lint.facts.scaler.is_scaler.
SCALER_TRIGGERS = ("scaler", "GradScaler")


class _ScalerRule(Rule):
    def visit_Module(self, node: cst.Module) -> None:
        self.check(self.ctx.scaler)

    def check(self, facts: ScalerFacts) -> None:
        raise NotImplementedError

    def line(self, event: Event) -> int:
        return self.ctx.position(event.call).start.line

    def last_scaled_backward(self, facts: ScalerFacts, events, before: Event) -> Event | None:
        found = None
        for event in events:
            if event.order >= before.order:
                break
            if (
                event.kind is Kind.SCALED_BACKWARD
                and not facts.exclusive(event, before)
                and not facts.is_disabled(event.scaler)
            ):
                found = event
        return found


class ClipBeforeUnscale(_ScalerRule):
    """## What it does
    Flags `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` called after
    `scaler.scale(loss).backward()` and before `scaler.step(optimizer)` with no
    `scaler.unscale_(optimizer)` in between; also a torch clip between `accelerator.backward(loss)`
    and `optimizer.step()` under `Accelerator(mixed_precision="fp16")`, whose own GradScaler scaled
    the loss. `accelerator.clip_grad_norm_` unscales by itself and is not flagged. The step may
    be split over the file's own methods (an engine's `backward_loss` scales, a callback clips, the
    engine's `optimizer_step` steps) and the clip may be a callable known by its name
    (`self.grad_clip_fn(model.parameters())`): those are reported with medium confidence.

    ## Why is this bad?
    Until `unscale_`, the gradients are multiplied by the loss scale (65536 at the start). The
    clipping threshold is then compared with a norm tens of thousands of times too large, so every
    step is clipped to a tiny fraction of the intended update (or, for `clip_grad_value_`, the
    values are cut to a scale-dependent size). Training still runs, just badly.

    ## Example
    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    Safe: inserts `scaler.unscale_(optimizer)` right before the clip call, with the scaler's own
    name and the optimizer its `step` receives; `scaler.step` then skips its own unscale. Offered
    when the scaler steps exactly one optimizer after the clip.
    """

    code = "DTL303"
    name = "clip-before-unscale"
    summary = "Gradient clipping on still-scaled gradients"
    queries = (
        "the GradScaler protocol of the file: scale, backward, unscale, clip and step events in order, across its own methods (facts/scaler.py)",
        "whether an `Accelerator` is built with `mixed_precision=\"fp16\"` (facts/precision_sources.py)",
    )
    fix_safety = Safety.SAFE
    # A clip call (torch.nn.utils.clip_grad_norm_/clip_grad_value_/clip_grad_norm) and a later
    # ``<scaler>.step(opt)`` of a scaler are needed for every finding.
    # ``clip``: also a clipping callable (``self.grad_clip_fn(...)``) or a method of the file that
    # clips, seen through the call.
    triggers = ("clip",)
    required_triggers = ((exact_word("step"),), SCALER_TRIGGERS + ("mixed_precision",))
    valid = (
        "import torch\nfor x in loader:\n    scaler.scale(model(x)).backward()\n    scaler.unscale_(optimizer)\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    scaler.step(optimizer)\n    scaler.update()\n",
        "import torch\nfor x in loader:\n    accelerator.backward(model(x))\n"
        "    accelerator.clip_grad_norm_(model.parameters(), 1.0)\n    optimizer.step()\n",
        "import torch\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    optimizer.step()\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=False)\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
        "    torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)\n    scaler.step(optimizer)\n",
        # The old HF Trainer: unscale under the same flag that enables the scaler.
        "import torch\nfor x in loader:\n    if use_amp:\n        scaler.scale(loss).backward()\n    else:\n        loss.backward()\n"
        "    if use_amp:\n        scaler.unscale_(opt)\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    if use_amp:\n        scaler.step(opt)\n        scaler.update()\n    else:\n        opt.step()\n",
    )
    invalid = (
        Invalid(
            "import torch\nclass Engine:\n    def __init__(self):\n        self.scaler = torch.amp.GradScaler('cuda')\n"
            "    def backward_loss(self, loss):\n        self.scaler.scale(loss).backward()\n"
            "    def optimizer_step(self, optimizer):\n        self.scaler.step(optimizer)\n        self.scaler.update()\n"
            "def on_batch_end(runner, grad_clip_fn):\n    runner.engine.backward_loss(runner.loss)\n"
            "    grad_clip_fn(runner.model.parameters())\n    runner.engine.optimizer_step(runner.optimizer)\n"
        ),
        Invalid(
            "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n"
            "for x in loader:\n    accelerator.backward(model(x))\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    optimizer.step()\n"
        ),
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    scaler.step(optimizer)\n    scaler.update()\n",
            fixed="import torch\nscaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
            "    scaler.unscale_(optimizer)\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    scaler.step(optimizer)\n    scaler.update()\n",
        ),
        Invalid(
            "from torch.nn.utils import clip_grad_value_\nclass Trainer:\n    def train_step(self, batch):\n"
            "        with self.autocast():\n            loss = self.model(batch)\n"
            "        self.scaler.scale(loss).backward()\n        if self.max_grad:\n"
            "            clip_grad_value_(self.model.parameters(), self.max_grad)\n"
            "        self.scaler.step(self.optim)\n        self.scaler.update()\n",
            fixed="from torch.nn.utils import clip_grad_value_\nclass Trainer:\n    def train_step(self, batch):\n"
            "        with self.autocast():\n            loss = self.model(batch)\n"
            "        self.scaler.scale(loss).backward()\n        if self.max_grad:\n"
            "            self.scaler.unscale_(self.optim)\n"
            "            clip_grad_value_(self.model.parameters(), self.max_grad)\n"
            "        self.scaler.step(self.optim)\n        self.scaler.update()\n",
        ),
        Invalid(
            "import torch.nn as nn\nwhile True:\n    for micro in range(accum):\n        scaler.scale(loss).backward()\n"
            "    if clip:\n        nn.utils.clip_grad_norm_(model.parameters(), clip)\n"
            "    scaler.step(opt)\n    scaler.update()\n",
            fixed="import torch.nn as nn\nwhile True:\n    for micro in range(accum):\n        scaler.scale(loss).backward()\n"
            "    if clip:\n        scaler.unscale_(opt)\n        nn.utils.clip_grad_norm_(model.parameters(), clip)\n"
            "    scaler.step(opt)\n    scaler.update()\n",
        ),
    )

    def check(self, facts: ScalerFacts) -> None:
        for clip in facts.events_through_calls():
            if clip.kind is not Kind.CLIP:
                continue
            if clip.through_call:
                self._check_clip_through_calls(facts, clip)
                continue
            self._check_clip(facts, clip)
            self._check_accelerate_clip(facts, clip)

    def _check_clip_through_calls(self, facts: ScalerFacts, clip: Event) -> None:
        """The protocol split over the file's functions: the scaled backward, the clip or the step
        happens in a method the loop calls (a callback calling its engine's ``backward_loss``,
        then a ``grad_clip_fn``, then the engine's ``optimizer_step``)."""
        events = facts.iteration(clip, through_calls=True)
        backward = self.last_scaled_backward(facts, events, clip)
        if backward is None:
            return
        scaler = backward.scaler
        step = next(
            (e for e in events if e.kind is Kind.STEP and e.scaler == scaler and e.order > clip.order
             and not facts.exclusive(e, clip)),
            None,
        )
        if step is None or facts.is_disabled(scaler):
            return
        if any(e.kind is Kind.UNSCALE and e.scaler == scaler and backward.order < e.order < clip.order
               and not facts.exclusive(e, clip) for e in events):
            return
        if clip.via is not None and any(e.kind is Kind.UNSCALE for e in facts.events if e.function is clip.via.function):
            return
        parts = []
        for label, event in (("the scaled backward", backward), ("the scaler steps", step)):
            if event.through_call:
                parts.append(f"{label} in `{dotted_name(event.call.func)}` (line {self.line(event)})")
        where = f": {' and '.join(parts)}" if parts else ""
        what = f"`{dotted_name(clip.call.func) or _callee(clip)}`"
        if clip.via is None:
            what += " (a gradient-clipping callable)"
        binding = facts.binding(scaler)
        scaler_text = f"the GradScaler of line {binding.line}" if binding else f"`{scaler}`"
        self.report(
            clip.call,
            f"{what} clips gradients still scaled by {scaler_text}{where}, with no `unscale_` before"
            f" the clip; call the scaler's `unscale_(optimizer)` first",
            confidence=Confidence.MEDIUM,
        )

    def _check_accelerate_clip(self, facts: ScalerFacts, clip: Event) -> None:
        """``accelerator.backward(loss)`` under ``Accelerator(mixed_precision="fp16")`` scales the
        loss with accelerate's own GradScaler, which unscales only in the optimizer's step (or in
        ``accelerator.clip_grad_norm_``): a torch clip in between sees scaled gradients."""
        events = facts.iteration(clip)
        backward = next((e for e in reversed(events) if e.kind is Kind.BACKWARD and e.order < clip.order), None)
        if backward is None or dotted_name(backward.call.func) != "accelerator.backward":
            return
        if not any(e.kind is Kind.OPTIMIZER_STEP and e.order > clip.order for e in events):
            return
        source = next((f for f in precision_sources.sources_in(self.ctx.module, self.ctx.names, self.ctx)
                       if f.framework == "accelerate" and f.effect.scaler and not f.effect.conditional), None)
        if source is None:
            return
        self.report(
            clip.call,
            f"`{_callee(clip)}` sees gradients still scaled by accelerate's GradScaler ({source.description},"
            f" line {self.ctx.position(source.node).start.line}): `accelerator.backward` scales the loss and only"
            f" the optimizer step unscales; use `accelerator.clip_grad_norm_`, which unscales first",
            confidence=Confidence.HIGH,
        )

    def _check_clip(self, facts: ScalerFacts, clip: Event) -> None:
        events = facts.iteration(clip)
        backward = self.last_scaled_backward(facts, events, clip)
        if backward is not None:
            scaler, since = backward.scaler, backward.order
        elif clip.loop is None:
            # A helper such as YOLO's ``optimizer_step``: clip then ``scaler.step`` with no
            # ``unscale_`` of that scaler anywhere in the file (not even in a caller).
            first_step = next(
                (e for e in events if e.kind is Kind.STEP and e.order > clip.order and not facts.exclusive(e, clip)),
                None,
            )
            if first_step is None or facts.is_disabled(first_step.scaler):
                return
            scaler, since = first_step.scaler, -1
            if any(e.kind is Kind.UNSCALE and e.scaler == scaler for e in facts.events):
                return
        else:
            return
        steps = [
            e
            for e in events
            if e.kind is Kind.STEP and e.scaler == scaler and e.order > clip.order and not facts.exclusive(e, clip)
        ]
        if not steps:
            return
        unscales = [
            e
            for e in events
            if e.kind is Kind.UNSCALE and e.scaler == scaler and since < e.order < clip.order and not facts.exclusive(e, clip)
        ]
        # An unscale_ under its own ``if`` (``if use_amp:``) usually shares the scaler's flag.
        if unscales:
            return
        optimizers = sorted({step.optimizer for step in steps})
        optimizer = steps[0].optimizer
        message = (
            f"`{_callee(clip)}` sees gradients still scaled by {facts.describe(scaler)}: "
            f"call `{scaler}.unscale_({optimizer})` first"
        )
        fix = None
        if len(optimizers) == 1 and isinstance(clip.statement, cst.SimpleStatementLine):
            edit = self.insert_before_statement(clip.statement, f"{scaler}.unscale_({optimizer})")
            fix = Fix(Safety.SAFE, (edit,), f"unscale the gradients of `{optimizer}` before clipping")
        self.report(clip.call, message, confidence=Confidence.HIGH, fix=fix)


class ScalerStateMachine(_ScalerRule):
    """## What it does
    Checks the order of GradScaler calls within one training iteration (one loop body, or one
    step function): `scaler.step(opt)` twice for the same optimizer without `scaler.update()` in
    between, `scaler.unscale_(opt)` twice or after `scaler.step(opt)`, `scaler.update()` before
    `scaler.step(...)`, and `scaler.step(opt)` after a plain `loss.backward()` when the function never
    calls `scaler.scale(...)`. Calls in different branches of one `if` are not combined; calls in a
    nested loop (micro-steps) are not counted twice.

    ## Why is this bad?
    GradScaler keeps per-optimizer state between `unscale_`, `step` and `update`. Out of order it
    raises at run time ("step() has already been called since the last update().",
    "unscale_() has already been called on this optimizer since the last update().",
    "Attempted step but _scale is None.", "No inf checks were recorded prior to update.") or, with
    `update()` first, adjusts the scale from the previous iteration's inf checks.

    ## Example
    ```python
    scaler.scale(loss).backward()
    scaler.update()
    scaler.step(optimizer)
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    No fix: the right order depends on what the surrounding code meant.
    """

    code = "DTL304"
    name = "scaler-state-machine"
    summary = "GradScaler calls out of order within an iteration"
    queries = (
        "the GradScaler protocol of the file: its calls in order within one iteration (facts/scaler.py)",
    )
    # Every finding is on a scaler's ``.step``/``.unscale_`` (or an ``.update`` before a ``.step``).
    triggers = SCALER_TRIGGERS
    required_triggers = ((exact_word("step"), exact_word("unscale_")),)
    valid = (
        "for x in loader:\n    scaler.scale(model(x)).backward()\n    scaler.unscale_(opt)\n    clip(model)\n"
        "    scaler.step(opt)\n    scaler.update()\n",
        "for i, x in enumerate(loader):\n    scaler.scale(model(x)).backward()\n    if (i + 1) % accum == 0:\n"
        "        scaler.step(opt)\n        scaler.update()\n        opt.zero_grad()\n",
        "for x in loader:\n    if use_amp:\n        scaler.scale(loss).backward()\n        scaler.step(opt)\n"
        "    else:\n        loss.backward()\n        opt.step()\n    scaler.update()\n",
        "for x in loader:\n    scaler.scale(loss_g).backward()\n    scaler.step(opt_g)\n"
        "    scaler.scale(loss_d).backward()\n    scaler.step(opt_d)\n    scaler.update()\n",
        "def optimizer_step(self):\n    self.scaler.unscale_(self.optimizer)\n    self.scaler.step(self.optimizer)\n"
        "    self.scaler.update()\n",
    )
    invalid = (
        Invalid(
            "for x in loader:\n    scaler.scale(model(x)).backward()\n    scaler.update()\n    scaler.step(opt)\n"
        ),
        Invalid(
            "for x in loader:\n    scaler.scale(model(x)).backward()\n    scaler.unscale_(opt)\n"
            "    scaler.step(opt)\n    if log:\n        scaler.step(opt)\n    scaler.update()\n"
        ),
        Invalid(
            "def train(model, loader, opt, scaler):\n    for x in loader:\n        scaler.unscale_(opt)\n"
            "        clip(model)\n        scaler.unscale_(opt)\n        scaler.step(opt)\n        scaler.update()\n"
        ),
        Invalid(
            "from torch.cuda.amp import GradScaler\nscaler = GradScaler()\nfor x in loader:\n    loss = model(x)\n"
            "    loss.backward()\n    scaler.step(optimizer)\n    scaler.update()\n"
        ),
    )

    def check(self, facts: ScalerFacts) -> None:
        regions: list[tuple[object, object]] = []
        for event in facts.events:
            key = (event.function, event.loop)
            if key not in regions:
                regions.append(key)
        reported: set[int] = set()
        for function, loop in regions:
            events = [e for e in facts.events if e.function is function and e.loop is loop]
            for message, event, confidence in self._region_problems(facts, events):
                if id(event) not in reported:
                    reported.add(id(event))
                    self.report(event.call, message, confidence=confidence)
        for event, backward in self._steps_without_scale(facts):
            if id(event) not in reported:
                reported.add(id(event))
                message = (
                    f"`{event.scaler}.step({event.optimizer})` follows a plain `backward()` (line "
                    f"{self.line(backward)}) and `{event.scaler}.scale(...)` is never called here: GradScaler "
                    f"raises \"Attempted step but _scale is None.\"; use `{event.scaler}.scale(loss).backward()`"
                )
                self.report(event.call, message, confidence=Confidence.MEDIUM)

    def _region_problems(self, facts: ScalerFacts, events: list[Event]):
        """(message, event, confidence) for each out-of-order call of one iteration's events."""
        def updated_between(scaler: str, first: Event, second: Event) -> bool:
            return any(
                e.kind is Kind.UPDATE and e.scaler == scaler and first.order < e.order < second.order
                for e in events
            )

        scaler_events = [e for e in events if e.scaler and not facts.is_disabled(e.scaler)]
        for index, later in enumerate(scaler_events):
            earlier_events = [e for e in scaler_events[:index] if e.scaler == later.scaler and not facts.exclusive(e, later)]
            name = later.scaler
            if later.kind is Kind.STEP:
                for earlier in earlier_events:
                    if earlier.kind is Kind.STEP and earlier.optimizer == later.optimizer and not updated_between(name, earlier, later):
                        yield (
                            f"`{name}.step({later.optimizer})` called again (first on line {self.line(earlier)}) "
                            f"without `{name}.update()` in between: GradScaler raises \"step() has already been "
                            "called since the last update().\"",
                            later,
                            Confidence.HIGH,
                        )
                        break
            elif later.kind is Kind.UNSCALE:
                for earlier in earlier_events:
                    if earlier.optimizer != later.optimizer or updated_between(name, earlier, later):
                        continue
                    if earlier.kind is Kind.UNSCALE:
                        yield (
                            f"`{name}.unscale_({later.optimizer})` called again (first on line {self.line(earlier)}) "
                            f"without `{name}.update()` in between: GradScaler raises \"unscale_() has already "
                            "been called on this optimizer since the last update().\"",
                            later,
                            Confidence.HIGH,
                        )
                        break
                    if earlier.kind is Kind.STEP:
                        yield (
                            f"`{name}.unscale_({later.optimizer})` after `{name}.step({later.optimizer})` (line "
                            f"{self.line(earlier)}): GradScaler raises \"unscale_() is being called after step().\"",
                            later,
                            Confidence.HIGH,
                        )
                        break
            elif later.kind is Kind.UPDATE:
                stepped_before = any(e.kind is Kind.STEP for e in earlier_events)
                step_after = next(
                    (
                        e
                        for e in scaler_events[index + 1 :]
                        if e.kind is Kind.STEP and e.scaler == name and not facts.exclusive(e, later)
                        # the update is unconditional relative to the step (not an early-exit branch)
                        and later.guards == e.guards[: len(later.guards)]
                    ),
                    None,
                )
                if step_after is not None and not stepped_before:
                    yield (
                        f"`{name}.update()` runs before `{name}.step({step_after.optimizer})` (line "
                        f"{self.line(step_after)}) in the same iteration: GradScaler raises \"No inf checks were "
                        "recorded prior to update.\" on the first iteration and then follows the previous "
                        "iteration's inf checks; call `step` first, then `update`",
                        later,
                        Confidence.HIGH,
                    )

    def _steps_without_scale(self, facts: ScalerFacts):
        for step in facts.events:
            if step.kind is not Kind.STEP or facts.is_disabled(step.scaler):
                continue
            if facts.function_calls_scale(step.function, step.scaler):
                continue
            events = facts.iteration(step)
            backward = None
            for event in events:
                if event.order >= step.order:
                    break
                if event.kind is Kind.BACKWARD and not facts.exclusive(event, step):
                    backward = event
            if backward is not None:
                yield step, backward


# In-place updates a hand-written optimizer makes from ``.grad`` (``p.data.add_(p.grad, alpha=-lr)``).
_IN_PLACE_UPDATES = frozenset({"add_", "sub_", "addcdiv_", "addcmul_", "copy_"})


def _reads_grad(node: cst.CSTNode) -> bool:
    """``node`` reads some ``x.grad`` and takes no loss scale into account (``/ scaler.get_scale()``)."""
    reads = False
    for child in walk(node):
        if isinstance(child, cst.Attribute):
            if child.attr.value == "grad":
                reads = True
            elif "scale" in child.attr.value:
                return False
        elif isinstance(child, cst.Name) and "scale" in child.value:
            return False
    return reads


def _hand_updates(region: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Statements of ``region`` (not of functions defined in it) that update a tensor in place from
    a ``.grad``: ``p -= lr * p.grad``, ``p.data = p.data - lr * p.grad``, ``p.add_(p.grad, ...)``."""
    for node in walk(region):
        if isinstance(node, cst.AugAssign) and isinstance(node.operator, (cst.SubtractAssign, cst.AddAssign)):
            if _reads_grad(node.value):
                yield node
        elif isinstance(node, cst.Assign) and any(
            isinstance(target.target, cst.Attribute) and target.target.attr.value == "data" for target in node.targets
        ):
            if _reads_grad(node.value):
                yield node
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _IN_PLACE_UPDATES
            and any(_reads_grad(arg.value) for arg in node.args)
        ):
            yield node


class StepBypassesScaler(_ScalerRule):
    """## What it does
    Flags `optimizer.step()` after `scaler.scale(loss).backward()` when that optimizer is never
    stepped through `scaler.step(optimizer)` in the iteration, and a direct `optimizer.step()` in
    an iteration that also steps it through `scaler.step(optimizer)` (on a path where both run):
    the update is applied twice (IAHispano/Applio#860). Also a scaled backward whose
    gradients a hand-written update uses (`p -= lr * p.grad`, `p.data.add_(p.grad, alpha=-lr)`)
    in a function that never unscales them (no `scaler.unscale_`, no `scaler.step`, no optimizer
    step, and the update does not divide by `scaler.get_scale()`).

    ## Why is this bad?
    The gradients are still multiplied by the loss scale (65536 at the start): the optimizer applies
    an update tens of thousands of times too large (plain SGD) and never skips steps whose
    gradients overflowed to inf/NaN, which is the whole point of the scaler. `scaler.update()` then
    fails with "No inf checks were recorded prior to update."

    ## Example
    ```python
    scaler.scale(loss).backward()
    optimizer.step()
    ```

    ```python
    scaler.scale(loss).backward()
    for p in model.parameters():
        p.data -= lr * p.grad
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    The hand-written update has no fix. Unsafe: `optimizer.step()` becomes `scaler.step(optimizer)`, and `scaler.update()` is added after
    it when the iteration has none. Steps with inf/NaN gradients are then skipped, which changes the
    training trajectory.
    """

    code = "DTL305"
    name = "step-bypasses-scaler"
    summary = "Optimizer stepped directly after a scaled backward"
    queries = (
        "the GradScaler protocol of the file: scaled backwards and the optimizer steps that follow (facts/scaler.py)",
        "whether two calls can run on one path (facts/branch_conditions.py)",
    )
    fix_safety = Safety.UNSAFE
    # Needs ``<scaler>.scale(loss)`` (the attribute "scale"), its ``.backward()`` and an ``opt.step()``
    # or a hand-written update from ``.grad``.
    triggers = (exact_word("scale"),)
    required_triggers = ((exact_word("backward"),), (exact_word("step"), exact_word("grad")), SCALER_TRIGGERS)
    valid = (
        "for x in loader:\n    scaler.scale(model(x)).backward()\n    scaler.step(optimizer)\n    scaler.update()\n"
        "    lr_scheduler.step()\n",
        "for x in loader:\n    if scaler is not None:\n        scaler.scale(loss).backward()\n        scaler.step(optimizer)\n"
        "        scaler.update()\n    else:\n        loss.backward()\n        optimizer.step()\n",
        "for x in loader:\n    loss.backward()\n    optimizer.step()\n",
        "import torch\nscaler = torch.amp.GradScaler(enabled=False)\nfor x in loader:\n    scaler.scale(loss).backward()\n"
        "    optimizer.step()\n",
        "for x in loader:\n    scaler.scale(loss).backward()\n    for p in params:\n"
        "        p.data -= lr * p.grad / scaler.get_scale()\n    scaler.update()\n",
        "for x in loader:\n    scaler.scale(loss).backward()\n    scaler.unscale_(optimizer)\n    for p in params:\n"
        "        p.data.add_(p.grad, alpha=-lr)\n",
    )
    invalid = (
        Invalid(
            "for x in loader:\n    scaler.scale(model(x)).backward()\n    optimizer.step()\n    optimizer.zero_grad()\n",
            fixed="for x in loader:\n    scaler.scale(model(x)).backward()\n    scaler.step(optimizer)\n    scaler.update()\n"
            "    optimizer.zero_grad()\n",
        ),
        Invalid(
            "import torch\nclass Trainer:\n    def __init__(self):\n        self.scaler = torch.amp.GradScaler('cuda')\n"
            "    def fit(self, loader):\n        for step, batch in enumerate(loader):\n"
            "            self.scaler.scale(self.loss(batch)).backward()\n"
            "            if (step + 1) % self.accum == 0:\n                self.opt.step()\n"
            "                self.scaler.update()\n",
            fixed="import torch\nclass Trainer:\n    def __init__(self):\n        self.scaler = torch.amp.GradScaler('cuda')\n"
            "    def fit(self, loader):\n        for step, batch in enumerate(loader):\n"
            "            self.scaler.scale(self.loss(batch)).backward()\n"
            "            if (step + 1) % self.accum == 0:\n                self.scaler.step(self.opt)\n"
            "                self.scaler.update()\n",
        ),
        Invalid(
            "for x in loader:\n    scaler.scale(loss_g + loss_d).backward()\n    scaler.step(opt_g)\n"
            "    opt_d.step()\n    scaler.update()\n",
            fixed="for x in loader:\n    scaler.scale(loss_g + loss_d).backward()\n    scaler.step(opt_g)\n"
            "    scaler.step(opt_d)\n    scaler.update()\n",
        ),
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
            "    with torch.no_grad():\n        for p in model.parameters():\n            p -= lr * p.grad\n"
            "            p.grad = None\n",
        ),
    )

    def check(self, facts: ScalerFacts) -> None:
        for event in facts.events:
            if event.kind is Kind.OPTIMIZER_STEP and facts.is_optimizer(event.optimizer):
                self._check_step(facts, event)
            elif event.kind is Kind.SCALED_BACKWARD and not facts.is_disabled(event.scaler):
                self._check_hand_update(facts, event)

    def _check_hand_update(self, facts: ScalerFacts, backward: Event) -> None:
        """A scaled backward whose gradients a hand-written update uses, with nothing unscaling them."""
        function_events = facts.iteration(backward, None, through_calls=True)
        if any(
            (event.kind in (Kind.STEP, Kind.UNSCALE) and event.scaler == backward.scaler)
            or event.kind is Kind.OPTIMIZER_STEP
            for event in function_events
        ):
            return  # the gradients reach an optimizer (the other check judges how)
        region = backward.loop or backward.function or facts.module
        if region is None:
            return
        update = next(_hand_updates(region), None)
        if update is None:
            return
        line = self.ctx.position(update).start.line
        self.report(
            backward.call,
            f"the gradients of this scaled backward are used by the hand-written update on line {line} while "
            f"still multiplied by the loss scale of {facts.describe(backward.scaler)}: nothing unscales them "
            f"(no `{backward.scaler}.unscale_`/`{backward.scaler}.step`), so each update is about 65536 times "
            f"too large and steps with inf/NaN gradients are not skipped; step a torch.optim optimizer "
            f"through `{backward.scaler}.step(...)`, or divide by `{backward.scaler}.get_scale()`",
            confidence=Confidence.HIGH,
        )

    def _check_step(self, facts: ScalerFacts, step: Event) -> None:
        # The iteration: the innermost loop with a scaled backward before the step (nanoGPT's
        # backward sits in a micro-step loop of its own), else the function body when in no loop.
        regions = list(reversed(step.loops)) or [None]
        for loop in regions:
            events = facts.iteration(step, loop)
            backward = self.last_scaled_backward(facts, events, step)
            if backward is not None:
                break
        else:
            return
        scaler, optimizer = backward.scaler, step.optimizer
        through = [e for e in events if e.kind is Kind.STEP and e.scaler == scaler and e.optimizer == optimizer]
        if through:
            both = [e for e in through if not branch_conditions.exclusive(self.ctx, e.call, step.call)]
            if both:
                self.report(
                    step.call,
                    f"`{optimizer}.step()` steps `{optimizer}` a second time: `{scaler}.step({optimizer})` on line "
                    f"{self.line(both[0])} already applied this iteration's (unscaled) gradients, so the update is "
                    f"applied twice and this one skips the scaler's inf/NaN check; remove it",
                    confidence=Confidence.HIGH,
                )
            return
        has_update = any(e.kind is Kind.UPDATE and e.scaler == scaler for e in events)
        then_update = "" if has_update else f" then `{scaler}.update()`"
        message = (
            f"`{optimizer}.step()` bypasses {facts.describe(scaler)}: the gradients of the scaled backward on "
            f"line {self.line(backward)} are still multiplied by the loss scale and inf/NaN steps are not skipped; "
            f"use `{scaler}.step({optimizer})`{then_update}"
        )
        fix = None
        if not step.call.args and isinstance(step.statement, cst.SimpleStatementLine):
            edits = [self.replace(step.call, f"{scaler}.step({optimizer})")]
            if not has_update:
                if not _is_lone_expression(step):
                    edits = None
                else:
                    edits.append(self.insert_after_statement(step.statement, f"{scaler}.update()"))
            if edits:
                fix = Fix(Safety.UNSAFE, tuple(edits), f"step `{optimizer}` through `{scaler}`")
        self.report(step.call, message, confidence=Confidence.HIGH, fix=fix)

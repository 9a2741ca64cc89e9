"""What runs inside an autocast block that must not: backward passes (DTL204) and plain BCE (DTL207).

"Inside" means lexically in the body of a ``with`` whose context is an enabled autocast: the call
itself (``torch.autocast``, ``torch.cuda.amp.autocast``, ``accelerator.autocast()``, any import
spelling) or a name this file binds to one (nanoGPT's ``ctx = nullcontext() if device_type ==
'cpu' else torch.amp.autocast(...)``). The innermost autocast decides: a nested
``autocast(enabled=False)`` block is outside. Nested functions and lambdas are not: their bodies
run whenever they are called.
"""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.amp import AutocastInfo, autocast_info, autocast_of_with
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import training_facts, walk
from dtype_lint.findings import Confidence, Edit, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule

SCOPE_BOUNDARIES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
NULL_CONTEXTS = ("contextlib.nullcontext", "nullcontext", "contextlib.suppress")


class _AutocastScope(Rule):
    """Shared by the rules of this module: which autocast block (if any) a node runs in."""

    _context_names: dict[str, AutocastInfo] | None = None

    def _bound_contexts(self) -> dict[str, AutocastInfo]:
        """Names (``ctx``, ``self.amp_ctx``) every assignment of which in this file is an autocast
        context, or a conditional between one and ``nullcontext()``."""
        if self._context_names is None:
            bound: dict[str, list[AutocastInfo | None]] = {}
            names = self.ctx.names

            for node in self.ctx.all_nodes:
                if type(node) is cst.Assign:
                    for target in node.targets:
                        text = dotted_name(target.target)
                        if text is not None:
                            value = node.value
                            key = f"{text}()" if _autocast_partial(names, value) is not None else text
                            bound.setdefault(key, []).append(_context_value(names, value))
            self._context_names = {
                text: infos[0]
                for text, infos in sorted(bound.items())
                if infos and all(info is not None for info in infos)
            }
        return self._context_names

    def _autocast_of(self, with_node: cst.With) -> tuple[AutocastInfo, str] | None:
        """The autocast ``with_node`` enters and how to name it in a message."""
        info = autocast_of_with(self.ctx.names, with_node)
        if info is not None:
            return info, f"the `{self.ctx.code_for(info.node.func)}` block"
        for item in with_node.items:
            # ``with ctx:`` (a bound context) or ``with amp_autocast():`` (a bound partial)
            value = item.item
            key = dotted_name(value) if not isinstance(value, cst.Call) else _partial_key(value)
            if key is not None and key in self._bound_contexts():
                text = self.ctx.code_for(value)
                return self._bound_contexts()[key], f"the `{text}` autocast block"
            if isinstance(value, cst.Call):
                # ``with amp_context():``, a helper of the file that returns an autocast context
                returned = training_facts(self.ctx).returned_autocast(value)
                if returned is not None:
                    return returned, f"the `{self.ctx.code_for(value)}` autocast block"
        return None

    def enclosing_autocast(self, node: cst.CSTNode) -> tuple[cst.With, AutocastInfo, str] | None:
        """The innermost enabled autocast ``with`` whose body holds ``node`` (during traversal)."""
        child = node
        for ancestor in reversed(self.ctx.ancestors):
            if isinstance(ancestor, SCOPE_BOUNDARIES):
                return None
            if isinstance(ancestor, cst.With) and child is ancestor.body:
                found = self._autocast_of(ancestor)
                if found is not None:
                    info, label = found
                    return None if info.enabled is False else (ancestor, info, label)
            child = ancestor
        return None


def _partial_key(call: cst.Call) -> str | None:
    """``amp_autocast()`` -> "amp_autocast()", the key a bound partial is stored under."""
    text = dotted_name(call.func)
    return f"{text}()" if text is not None and not call.args else None


def _context_value(names, value: cst.BaseExpression) -> AutocastInfo | None:
    info = autocast_info(names, value)
    if info is not None:
        return info
    partial = _autocast_partial(names, value)
    if partial is not None:
        return partial
    if isinstance(value, cst.IfExp):
        branches = [autocast_info(names, value.body), autocast_info(names, value.orelse)]
        others = [value.orelse, value.body]
        for info, other in zip(branches, others):
            if info is not None and info.enabled is not False and _is_null_context(names, other):
                # Enabled on one branch only: it may be on at run time.
                return AutocastInfo(info.device, info.dtype, None, info.node)
    return None


def _autocast_partial(names, value: cst.BaseExpression) -> AutocastInfo | None:
    """timm's ``amp_autocast = partial(torch.autocast, device_type="cuda", dtype=torch.float16)``."""
    if not isinstance(value, cst.Call) or not value.args or value.args[0].keyword is not None:
        return None
    if names.matches(value.func, "functools.partial") is None:
        return None
    return autocast_info(names, value.with_changes(func=value.args[0].value, args=value.args[1:]))


def _is_null_context(names, node: cst.BaseExpression) -> bool:
    if not isinstance(node, cst.Call):
        return False
    return names.matches(node.func, "contextlib.nullcontext") is not None or dotted_name(node.func) == "nullcontext"


# -- DTL204 ------------------------------------------------------------------------------------
GRAD_FUNCTIONS = ("torch.autograd.grad", "torch.autograd.backward")
# Calls that may move out of the autocast block together with the backward: the optimizer tail.
TAIL_METHODS = {
    "backward", "step", "update", "unscale_", "zero_grad", "scale", "parameters",
    "clip_grad_norm_", "clip_grad_value_",
}
TAIL_FUNCTIONS = {"clip_grad_norm_", "clip_grad_value_", "grad"}


def _is_tail_call(call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in TAIL_METHODS or func.attr.value in TAIL_FUNCTIONS
    return isinstance(func, cst.Name) and func.value in TAIL_FUNCTIONS


def _is_tail_statement(statement: cst.CSTNode) -> bool:
    """A statement made only of backward / optimizer-step calls (``scaler.step(opt)``, ...)."""
    if isinstance(statement, cst.SimpleStatementLine):
        if not all(isinstance(small, (cst.Expr, cst.Assign)) for small in statement.body):
            return False
    elif not isinstance(statement, cst.If):
        return False
    calls: list[cst.Call] = []
    for node in walk(statement, into_definitions=True):
        if type(node) is cst.FunctionDef:
            return False  # a nested def: more than calls and their plumbing
        if type(node) is cst.Call:
            calls.append(node)
    return bool(calls) and all(_is_tail_call(call) for call in calls)


class BackwardInAutocast(_AutocastScope):
    """## What it does
    Flags a backward pass inside an enabled autocast block: `loss.backward()`,
    `scaler.scale(loss).backward()`, `accelerator.backward(loss)`, `torch.autograd.grad(...)` or
    `torch.autograd.backward(...)` in the body of `with torch.autocast(...)`,
    `with torch.cuda.amp.autocast()`, `with accelerator.autocast()` or a context variable bound to
    one. A block entered with `enabled=False` does not count.

    ## Why is this bad?
    Autocast should wrap only the forward pass and the loss. "Backward passes under autocast are not
    recommended": backward ops run in the dtype autocast chose for the matching forward ops anyway,
    and running them under the autocast state adds casts, breaks the assumption of
    `torch.compile` that backward sees the forward's autocast state, and keeps the cast cache alive
    across the optimizer step.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x).loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x).loss
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    Unsafe: the fix dedents the backward and the optimizer statements that end the block
    (`.backward()`, `scaler.step/update/unscale_`, `optimizer.step/zero_grad`, gradient clipping)
    out of it. It is offered only when those statements are the last ones of a single-item
    `with` and something stays inside; the code moved out no longer runs under autocast.
    """

    code = "DTL204"
    name = "backward-in-autocast"
    summary = "Backward pass inside an autocast block"
    queries = (
        "the autocast `with` blocks around a backward call and whether they are enabled (facts/amp.py, facts/training.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    fix_safety = Safety.UNSAFE
    # An autocast region (every autocast spelling, bound or partial, ends in the word "autocast") and
    # a backward: ``.backward(...)``, ``torch.autograd.backward`` or ``torch.autograd.grad``.
    triggers = (exact_word("autocast"),)
    required_triggers = ((exact_word("backward"), exact_word("grad")),)
    valid = (
        "import torch\nwith torch.autocast('cuda'):\n    loss = model(x)\nloss.backward()\n",
        "import torch\nwith torch.autocast('cuda', enabled=False):\n    loss = model(x)\n    loss.backward()\n",
        "import torch\nwith torch.autocast('cuda'):\n    y = model(x)\n    with torch.autocast('cuda', enabled=False):\n        loss = crit(y.float(), t)\n        loss.backward()\n",
        "import torch\nwith torch.autocast('cuda'):\n    def closure():\n        loss = model(x)\n        loss.backward()\n        return loss\n",
        "from contextlib import nullcontext\nctx = nullcontext()\nwith ctx:\n    loss = model(x)\n    loss.backward()\n",
    )
    invalid = (
        Invalid(
            "import torch\nwith torch.autocast('cuda', dtype=torch.float16):\n    loss = model(x)\n"
            "    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n",
            fixed="import torch\nwith torch.autocast('cuda', dtype=torch.float16):\n    loss = model(x)\n"
            "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n",
        ),
        Invalid(
            "import torch as T\nfor x, y in loader:\n    with T.cuda.amp.autocast():\n        out = model(x)\n"
            "        loss = crit(out, y)\n        # accumulate\n        loss.backward()\n    opt.step()\n",
            fixed="import torch as T\nfor x, y in loader:\n    with T.cuda.amp.autocast():\n        out = model(x)\n"
            "        loss = crit(out, y)\n    # accumulate\n    loss.backward()\n    opt.step()\n",
        ),
        Invalid(
            "with accelerator.autocast():\n    loss = model(**batch).loss\n    accelerator.backward(loss)\n    print(loss.item())\n"
        ),
        Invalid(
            "import torch\nfrom contextlib import nullcontext\n"
            "ctx = nullcontext() if device == 'cpu' else torch.amp.autocast(device_type='cuda', dtype=torch.bfloat16)\n"
            "with ctx:\n    logits, loss = model(X, Y)\n    grads = torch.autograd.grad(loss, params)\n"
        ),
    )

    def _backward_call(self, node: cst.Call) -> bool:
        if self.ctx.names.matches(node.func, *GRAD_FUNCTIONS):
            return True
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "backward"):
            return False
        receiver = dotted_name(func.value) or ""
        if receiver.endswith("accelerator"):
            return True
        if receiver in ("self", "model", "engine", "model_engine") or isinstance(func.value, cst.Call) and not (
            isinstance(func.value.func, cst.Attribute) and func.value.func.attr.value == "scale"
        ):
            return False  # DeepSpeed's ``engine.backward(loss)``, an nn.Module method, ``super().backward``
        # Tensor.backward(gradient=None, retain_graph=None, ...): a loss-like receiver or no
        # positional argument besides a gradient.
        return "loss" in receiver.lower() or not any(arg.keyword is None for arg in node.args[1:])

    def visit_Call(self, node: cst.Call) -> None:
        if not self._backward_call(node):
            return
        found = self.enclosing_autocast(node)
        if found is None:
            return
        with_node, _info, label = found
        line = self.ctx.position(with_node).start.line
        call = self.ctx.code_for(node)
        call = call if len(call) <= 60 and "\n" not in call else self.ctx.code_for(node.func) + "(...)"
        message = (
            f"`{call}` runs inside {label} (line {line}): backward ops should not run under autocast;"
            " end the `with` block after the loss"
        )
        self.report(node, message, confidence=Confidence.HIGH, fix=self._dedent_fix(with_node, node))

    def _dedent_fix(self, with_node: cst.With, call: cst.Call) -> Fix | None:
        if len(with_node.items) != 1 or not isinstance(with_node.body, cst.IndentedBlock):
            return None
        body = list(with_node.body.body)
        statement = self._body_statement(with_node, call)
        if statement is None:
            return None
        first_tail = len(body)
        while first_tail > 0 and _is_tail_statement(body[first_tail - 1]):
            first_tail -= 1
        index = next(i for i, s in enumerate(body) if s is statement)
        if first_tail == 0 or index < first_tail:
            return None
        if any(self._reported_in(with_node)):
            return None  # one fix per block: an earlier backward in this block carries it
        start = self.ctx.position(body[first_tail]).start.line
        end = self.ctx.position(body[-1]).end.line
        outer = re.match(r"[ \t]*", self.ctx.lines[self.ctx.position(with_node).start.line - 1]).group(0)
        inner = re.match(r"[ \t]*", self.ctx.lines[start - 1]).group(0)
        if len(inner) <= len(outer):
            return None
        newline = self.ctx.newline
        moved = []
        for text in self.ctx.lines[start - 1 : end]:
            moved.append(outer + text[len(inner):] if text.startswith(inner) else text)
        # Comment lines right above the first moved statement belong to it.
        while start > 1 and self.ctx.lines[start - 2].strip().startswith("#") and self.ctx.lines[start - 2].startswith(inner):
            start -= 1
            moved.insert(0, outer + self.ctx.lines[start - 1][len(inner):])
        edit = Edit(start, 1, end + 1, 1, newline.join(moved) + newline)
        return Fix(Safety.UNSAFE, (edit,), "move the backward and optimizer step out of the autocast block")

    def _body_statement(self, with_node: cst.With, node: cst.CSTNode) -> cst.CSTNode | None:
        for index, ancestor in enumerate(self.ctx.ancestors):
            if ancestor is with_node.body:
                rest = self.ctx.ancestors[index + 1 :] + [node]
                return rest[0] if rest else None
        return None

    def _reported_in(self, with_node: cst.With):
        start = self.ctx.position(with_node.body).start.line
        end = self.ctx.position(with_node.body).end.line
        for finding, _ in self.reported:
            yield finding.fix is not None and start <= finding.line <= end


# -- DTL207 ------------------------------------------------------------------------------------
BCE_FUNCTIONS = ("torch.nn.functional.binary_cross_entropy",)
BCE_CLASSES = ("torch.nn.BCELoss", "torch.nn.modules.loss.BCELoss")
SIGMOIDS = ("torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit")


class BceUnderAutocast(_AutocastScope):
    """## What it does
    Flags `torch.nn.functional.binary_cross_entropy` and calls of an `nn.BCELoss()` instance
    constructed in this file (`self.criterion = nn.BCELoss()` in `__init__`, called in
    `training_step` or the loop) inside an enabled autocast block, or in a loss helper of the
    file that is called inside one (`def gan_loss(pred, real): return F.binary_cross_entropy(...)`).

    ## Why is this bad?
    Under CUDA autocast these raise "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss
    are unsafe to autocast": the probabilities come out of a half-precision `sigmoid`, where values
    near 0 and 1 round to exactly 0 and 1 and the log explodes. On CPU they silently run in fp32 on
    already-rounded probabilities, so the script only fails once it reaches a GPU.

    ## Example
    ```python
    with torch.autocast("cuda"):
        logits = model(x)
        loss = F.binary_cross_entropy(torch.sigmoid(logits), y)
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda"):
        logits = model(x)
        loss = F.binary_cross_entropy_with_logits(logits, y)
    ```

    ## Fix safety
    Unsafe: `binary_cross_entropy(sigmoid(z), y)` becomes `binary_cross_entropy_with_logits(z, y)`,
    which is the same loss computed stably (the numbers change slightly). Offered only when the
    input is literally a sigmoid call and the function is spelled as an attribute (`F.`...);
    `BCELoss` instances get no fix (their construction would change too).
    """

    code = "DTL207"
    name = "bce-under-autocast"
    summary = "Binary cross-entropy on probabilities inside autocast"
    queries = (
        "the autocast `with` blocks around a call (facts/amp.py) and the enabled region the dtype flow records there (facts/dtypes.py `autocast_at`)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    fix_safety = Safety.UNSAFE
    # ``torch.nn.functional.binary_cross_entropy`` or ``torch.nn.BCELoss`` (last name parts), inside
    # an autocast region (the word "autocast").
    triggers = (exact_word("binary_cross_entropy"), exact_word("BCELoss"))
    required_triggers = ((exact_word("autocast"),),)
    valid = (
        "import torch\nimport torch.nn.functional as F\nwith torch.autocast('cuda'):\n"
        "    loss = F.binary_cross_entropy_with_logits(model(x), y)\n",
        "import torch\nimport torch.nn.functional as F\nwith torch.autocast('cuda'):\n    p = torch.sigmoid(model(x))\n"
        "loss = F.binary_cross_entropy(p.float(), y)\n",
        "import torch\nfrom torch import nn\ncrit = nn.BCEWithLogitsLoss()\nwith torch.autocast('cuda'):\n    loss = crit(model(x), y)\n",
        "import torch\nfrom torch import nn\ncrit = nn.BCELoss()\nwith torch.autocast('cuda'):\n    p = model(x)\n"
        "    with torch.autocast('cuda', enabled=False):\n        loss = crit(p.float(), y)\n",
    )
    invalid = (
        Invalid(
            "import torch\nimport torch.nn.functional as F\nwith torch.autocast('cuda'):\n"
            "    loss = F.binary_cross_entropy(torch.sigmoid(model(x)), y, reduction='sum')\n",
            fixed="import torch\nimport torch.nn.functional as F\nwith torch.autocast('cuda'):\n"
            "    loss = F.binary_cross_entropy_with_logits(model(x), y, reduction='sum')\n",
        ),
        Invalid(
            "import torch as T\nwith T.cuda.amp.autocast():\n    logits = net(x)\n"
            "    loss = T.nn.functional.binary_cross_entropy(logits.sigmoid(), y)\n",
            fixed="import torch as T\nwith T.cuda.amp.autocast():\n    logits = net(x)\n"
            "    loss = T.nn.functional.binary_cross_entropy_with_logits(logits, y)\n",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass D(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.criterion = nn.BCELoss()\n"
            "    def fit(self, x, y):\n        with torch.autocast('cuda'):\n"
            "            loss = self.criterion(self.head(x).sigmoid(), y)\n        return loss\n"
        ),
        Invalid(
            "import torch\nfrom torch.nn.functional import binary_cross_entropy\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n"
            "    loss = binary_cross_entropy(probs, y)\n"
        ),
    )

    _bce_names: set[str] | None = None

    def _bce_instances(self) -> set[str]:
        """Names every assignment of which in this file is an ``nn.BCELoss(...)`` construction."""
        if self._bce_names is None:
            bound: dict[str, list[bool]] = {}
            names = self.ctx.names

            for node in self.ctx.all_nodes:
                if type(node) is cst.Assign:
                    for target in node.targets:
                        text = dotted_name(target.target)
                        if text is not None:
                            is_bce = isinstance(node.value, cst.Call) and names.matches(node.value.func, *BCE_CLASSES)
                            bound.setdefault(text, []).append(bool(is_bce))
            self._bce_names = {text for text, kinds in bound.items() if all(kinds)}
        return self._bce_names

    def _bce_kind(self, node: cst.Call) -> str | None:
        names = self.ctx.names
        if names.matches(node.func, *BCE_FUNCTIONS):
            return "function"
        if isinstance(node.func, cst.Call) and names.matches(node.func.func, *BCE_CLASSES):
            return "instance"
        text = dotted_name(node.func)
        if text is not None and text in self._bce_instances():
            return "instance"
        return None

    def visit_Call(self, node: cst.Call) -> None:
        kind = self._bce_kind(node)
        if kind is None:
            return
        found = self.enclosing_autocast(node)
        confidence = Confidence.HIGH
        if found is not None:
            with_node, info, label = found
            where = f"inside {label} (line {self.ctx.position(with_node).start.line})"
        else:
            # a helper (``def gan_loss(pred, y): return F.binary_cross_entropy(pred, y)``) the dtype
            # flow ran under its caller's autocast region
            info = self.ctx.flow.autocast_at(node)
            if info is None or info.node is None:
                return
            where = f"under the autocast region of its caller (line {self.ctx.position(info.node).start.line})"
            confidence = Confidence.HIGH if info.enabled is True else Confidence.MEDIUM
        callee = self.ctx.code_for(node.func)
        what = f"`{callee}`" if kind == "function" else f"`{callee}` (an `nn.BCELoss`)"
        message = (
            f"{what} {where} is unsafe to autocast (CUDA raises): compute the loss "
            "from logits with `binary_cross_entropy_with_logits` / `nn.BCEWithLogitsLoss`"
        )
        fix = self._logits_fix(node) if kind == "function" else None
        if info.device == "cpu":
            # CPU autocast runs BCE in fp32 without raising: only the rounded probabilities remain.
            message = message.replace("is unsafe to autocast (CUDA raises)", "gets probabilities rounded to low precision")
            self.report(node, message, confidence=Confidence.LOW, fix=fix)
            return
        self.report(node, message, confidence=confidence, fix=fix)

    def _logits_fix(self, node: cst.Call) -> Fix | None:
        if not isinstance(node.func, cst.Attribute) or not node.args:
            return None
        first = node.args[0]
        if first.star or (first.keyword is not None and first.keyword.value != "input"):
            return None
        logits = self._sigmoid_argument(first.value)
        if logits is None:
            return None
        edits = (
            self.replace(node.func.attr, "binary_cross_entropy_with_logits"),
            self.replace(first.value, self.ctx.code_for(logits)),
        )
        return Fix(Safety.UNSAFE, edits, "use binary_cross_entropy_with_logits on the logits")

    def _sigmoid_argument(self, value: cst.BaseExpression) -> cst.BaseExpression | None:
        if not isinstance(value, cst.Call):
            return None
        if isinstance(value.func, cst.Attribute) and value.func.attr.value == "sigmoid" and not value.args:
            if not self.ctx.names.qualified_names(value.func):  # ``z.sigmoid()``, not a module function
                return value.func.value
        if self.ctx.names.matches(value.func, *SIGMOIDS) and len(value.args) == 1 and not value.args[0].star:
            return value.args[0].value
        return None

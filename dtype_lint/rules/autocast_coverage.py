"""DTL211 train-forward-outside-autocast: the model's forward runs under autocast where the
program evaluates it and outside autocast where it trains it. DTL212 autocast-cache-no-grad: a
module run under `no_grad` inside an autocast region and then run again with grad in the same
region."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.flow.library import EVAL_FUNCTION, MODEL_NAME
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import calls_in, is_backward, is_scaled_backward, training_facts
from dtype_lint.findings import Confidence
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule

# Functions that compute the training loss by their name (``compute_loss``, ``train_step``,
# ``training_step``, ``train_one_epoch``); a function that calls ``backward`` is one whatever its name.
TRAINING_FUNCTION = re.compile(r"(^|_)(train|training|compute_loss|fit)(_|$)", re.IGNORECASE)


class TrainForwardOutsideAutocast(Rule):
    """## What it does
    Flags a model's forward in a training function (one that calls `backward()`, or is named
    `train_step` / `training_step` / `compute_loss` / `fit` ...) that runs outside any autocast
    region, when another function of the file runs the same model (the same expression: `model`,
    `self.model`) inside an autocast block, and the program means to train in mixed precision: it
    builds a `GradScaler`, or opens that block through a context it names
    (`self.autocast_smart_context_manager()`, `ctx = torch.autocast(...)`), not a one-off
    `with torch.autocast(...)` that speeds up inference. A training function
    called inside an autocast block is not flagged.

    ## Why is this bad?
    Training then runs the model in float32 while evaluation runs it in float16/bfloat16: the
    mixed precision the flags ask for never happens where it matters (speed, memory), a
    GradScaler scales float32 losses for nothing, and evaluation measures a model in another
    dtype than the one being trained (huggingface/transformers#43302: `compute_loss` forgot the
    autocast context that `prediction_step` used).

    ## Example
    ```python
    def train_step(model, batch):
        return model(**batch).loss

    def evaluate(model, batch):
        with torch.autocast("cuda", dtype=amp_dtype):
            return model(**batch).loss
    ```

    ## Use instead
    ```python
    def train_step(model, batch):
        with torch.autocast("cuda", dtype=amp_dtype):
            return model(**batch).loss
    ```

    ## Fix safety
    No fix: the region's dtype and enabled flag are the training loop's choice.
    """

    code = "DTL211"
    name = "train-forward-outside-autocast"
    summary = "Training forward runs outside autocast while evaluation runs the same model inside it"
    queries = (
        "the file's training functions, scalers and autocast `with` blocks, including contexts its own functions return (facts/training.py)",
        "the dtype flow: the model a call runs and the enabled autocast region around it (facts/dtypes.py, computed by facts/flow/interpreter.py)",
    )
    triggers = (exact_word("autocast"),)
    valid = (
        "import torch\ndef train_step(model, x):\n    with torch.autocast('cuda'):\n        return model(x).mean()\n"
        "def evaluate(model, x):\n    with torch.autocast('cuda'):\n        return model(x)\n"
        "scaler = torch.amp.GradScaler('cuda')\n",
        "import torch\ndef train_step(model, x):\n    return model(x).mean()\n"
        "def evaluate(model, x):\n    with torch.autocast('cuda'):\n        return model(x)\n",
    )
    invalid = (
        Invalid(
            "import torch\ndef train_step(model, x):\n    return model(x).mean()\n"
            "def evaluate(model, x):\n    with torch.autocast('cuda'):\n        return model(x)\n"
            "net = torch.nn.Linear(4, 2)\nscaler = torch.amp.GradScaler('cuda')\n"
            "scaler.scale(train_step(net, x)).backward()\nevaluate(net, x)\n"
        ),
        Invalid(
            "import torch\nclass Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(4, 2)\n"
            "    def amp(self):\n        return torch.autocast('cuda', dtype=torch.float16)\n"
            "    def compute_loss(self, x):\n        return self.model(x).mean()\n"
            "    def predict(self, x):\n        with self.amp():\n            return self.model(x)\n"
            "Trainer().compute_loss(x)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        facts = training_facts(self.ctx)
        inside: dict[str, cst.Call] = {}  # callee text -> a forward under an autocast block
        outside: list[tuple[str, cst.Call, cst.FunctionDef]] = []
        for call in facts.calls:
            callee = dotted_name(call.func)
            if callee is None or not self._is_model(call.func):
                continue
            regions = facts.enclosing_autocasts(call)
            if any(info.enabled is not False for _, info in regions):
                if facts.scalers or any(self._named_context(facts, w) for w, _ in regions):
                    inside.setdefault(callee, call)
                continue
            if regions:
                continue  # inside ``autocast(enabled=False)``: deliberately float32
            function = self.ctx.enclosing(call, cst.FunctionDef)
            if function is not None and self._trains(function):
                outside.append((callee, call, function))
        reported: set[int] = set()  # one finding per training function, at its first such forward
        for callee, call, function in outside:
            other = inside.get(callee)
            if other is None or id(function) in reported or self.ctx.enclosing(other, cst.FunctionDef) is function:
                continue
            if self.ctx.flow.autocast_at(call) is not None:
                continue  # the training function is called inside an autocast block
            reported.add(id(function))
            self.report(
                call,
                f"`{self.ctx.code_for(call.func)}` runs its training forward in `{function.name.value}` outside"
                f" autocast, while line {self.ctx.position(other).start.line} runs it under autocast: training"
                " stays in float32 (and evaluation measures another dtype); open the same autocast region here",
                confidence=Confidence.MEDIUM,
            )

    @staticmethod
    def _named_context(facts, with_node: cst.With) -> bool:
        """The block opens an autocast context the program names (a name bound to one, a helper
        returning one): meant for training too, not a one-off inference speed-up."""
        for item in with_node.items:
            value = item.item
            if isinstance(value, (cst.Name, cst.Attribute)):
                return True
            if isinstance(value, cst.Call) and facts.returned_autocast(value) is not None:
                return True
        return False

    def _is_model(self, func: cst.BaseExpression) -> bool:
        value = self.ctx.flow.value_of(func)
        return value is not None and value.kind == "module" and not (
            isinstance(value.info, str) and value.info.startswith("torch.nn.") and "Loss" in value.info)

    def _trains(self, function: cst.FunctionDef) -> bool:
        if EVAL_FUNCTION.search(function.name.value) or any(
                "no_grad" in self.ctx.code_for(d.decorator) or "inference_mode" in self.ctx.code_for(d.decorator)
                for d in function.decorators):
            return False
        if any(is_backward(c) or is_scaled_backward(c) for c in calls_in(function.body)):
            return True
        return TRAINING_FUNCTION.search(function.name.value) is not None


class AutocastCacheNoGrad(Rule):
    """## What it does
    Flags a `with torch.no_grad():` (or `torch.inference_mode()`) block inside an autocast
    region that runs a module which the same autocast region runs again afterwards outside the
    `no_grad` block (a stop-gradient target branch followed by the online branch, an EMA teacher
    sharing layers), unless the region was opened with `cache_enabled=False`.

    ## Why is this bad?
    Autocast caches the low-precision copies of a module's weights for the whole region. Made
    under `no_grad`, the cached copies have no autograd history, and the later forward reuses
    them: its output has no `grad_fn` through those weights, `loss.backward()` raises "element 0
    of tensors does not require grad" or silently leaves the weights without gradients
    (pytorch/pytorch#105211, #112583).

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        with torch.no_grad():
            target = encoder(view_b)
        online = encoder(view_a)
    ```

    ## Use instead
    ```python
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
        target = encoder(view_b)
    with torch.autocast("cuda", dtype=torch.float16):
        online = encoder(view_a)
    ```

    ## Fix safety
    No fix: splitting the region or disabling its cache (`cache_enabled=False`) are both choices.
    """

    code = "DTL212"
    name = "autocast-cache-no-grad"
    summary = "Module run under no_grad inside autocast, then with grad in the same region"
    queries = (
        "the autocast `with` blocks of the file (facts/training.py, facts/amp.py)",
        "the dtype flow: which module a call runs (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    triggers = (exact_word("autocast"),)
    required_triggers = ((exact_word("no_grad"), exact_word("inference_mode")),)
    valid = (
        "import torch\nwith torch.no_grad(), torch.autocast('cuda'):\n    t = encoder(b)\nwith torch.autocast('cuda'):\n    o = encoder(a)\n",
        "import torch\nwith torch.autocast('cuda', cache_enabled=False):\n    with torch.no_grad():\n        t = encoder(b)\n    o = encoder(a)\n",
    )
    invalid = (
        Invalid("import torch\nwith torch.autocast('cuda'):\n    with torch.no_grad():\n        t = encoder(b)\n    o = encoder(a)\n"),
        Invalid(
            "import torch\ndef step(model, teacher_in, x):\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
            "        with torch.inference_mode():\n            target = model.backbone(teacher_in)\n"
            "        pred = model.backbone(x)\n    return pred, target\n"
        ),
    )

    def visit_With(self, node: cst.With) -> None:
        facts = training_facts(self.ctx)
        info = facts.autocast_of_with(node)
        if info is None or info.enabled is False or _cache_disabled(info.node):
            return
        body = list(node.body.body) if isinstance(node.body, cst.IndentedBlock) else []
        for index, statement in enumerate(body):
            if not (isinstance(statement, cst.With) and any(_no_grad(self.ctx, item.item) for item in statement.items)):
                continue
            inside = {dotted_name(c.func) for c in calls_in(statement.body)} - {None}
            for later in body[index + 1:]:
                again = next((c for c in calls_in(later) if dotted_name(c.func) in inside
                              and self._is_module(c.func)), None)
                if again is not None:
                    self.report(
                        next(item.item for item in statement.items if _no_grad(self.ctx, item.item)),
                        f"`{self.ctx.code_for(again.func)}` runs here under no_grad inside the autocast region of"
                        f" line {self.ctx.position(node).start.line}, and again with grad at line"
                        f" {self.ctx.position(again).start.line}: autocast reuses the weight copies it cached"
                        " without autograd history, so that forward has no grad_fn through them; close the autocast"
                        " region around the no_grad block (or open it with `cache_enabled=False`)",
                        confidence=Confidence.MEDIUM,
                    )
                    return

    def _is_module(self, func: cst.BaseExpression) -> bool:
        """A module by the dtype flow, or, unknown to it, by a model-like name (``encoder``,
        ``model.backbone``); never a function of torch or of this file."""
        value = self.ctx.flow.value_of(func)
        if value is not None and value.kind != "unknown":
            return value.kind == "module"
        name = dotted_name(func)
        if name is None or self.ctx.names.qualified_names(func) or name in training_facts(self.ctx).functions:
            return False
        return MODEL_NAME.search(name.rsplit(".", 1)[-1]) is not None


def _cache_disabled(call: cst.Call | None) -> bool:
    if call is None:
        return False
    return any(a.keyword is not None and a.keyword.value == "cache_enabled" and isinstance(a.value, cst.Name)
               and a.value.value == "False" for a in call.args)


def _no_grad(ctx, expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and ctx.names.matches(expr.func, "torch.no_grad", "torch.inference_mode") is not None

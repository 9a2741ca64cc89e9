"""DTL211 train-forward-outside-autocast: the model's forward runs under autocast where the
program evaluates it and outside autocast where it trains it."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.flow.library import EVAL_FUNCTION
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

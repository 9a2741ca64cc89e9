"""DTL408 loss-downcast: a loss value cast to float16/bfloat16 by hand in a training program."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.flow.library import LOWP_TRIGGERS
from dtype_lint.facts.numerics import facts
from dtype_lint.facts.safe_context import without_grad
from dtype_lint.facts.training import call_name
from dtype_lint.findings import Confidence
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.model_input import LOSS_FUNCTIONS

LOW_CASTS = {"half": "float16", "bfloat16": "bfloat16"}
_CALLS_BACKWARD = re.compile(r"\bbackward\b")
LOW_DTYPES = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16"}


class LossDowncast(Rule):
    """## What it does
    Flags a loss (the result of a torch loss function such as `F.mse_loss`, `F.cross_entropy`)
    cast to float16 or bfloat16 by hand (`loss.half()`, `loss.to(torch.float16)`) in a file that
    calls `backward()`: `return mse.half()` in a distillation helper, a term of a total loss.

    ## Why is this bad?
    The loss is a scalar computed in float32 on purpose (autocast runs losses in float32); rounded
    to float16 it keeps 3 significant digits, and an auxiliary loss above 65504 becomes inf. Its
    gradient then flows back through a float16 cast into a float32 graph: older torch raised
    `Function AddBackward0 returned an invalid gradient at index 1 - expected type HalfTensor but
    got FloatTensor` when it was added to a float32 loss (intersun/PKD-for-BERT-Model-Compression#6);
    newer torch silently mixes them.

    ## Example
    ```python
    def distill_loss(teacher_h, student_h):
        return F.mse_loss(teacher_h.float(), student_h.float()).half()
    ```

    ## Use instead
    ```python
    def distill_loss(teacher_h, student_h):
        return F.mse_loss(teacher_h.float(), student_h.float())
    ```

    ## Fix safety
    No fix: whether the cast was meant for a float16 optimizer step elsewhere is not known here.
    """

    code = "DTL408"
    name = "loss-downcast"
    summary = "Loss value cast to float16/bfloat16 by hand"
    queries = (
        "the values a name may hold where it is cast, from the file's assignments (facts/numerics.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    triggers = LOWP_TRIGGERS
    required_triggers = ((exact_word("backward"),),)
    valid = (
        # evaluation under no_grad in a training file: no gradient flows through the cast
        "import torch\nimport torch.nn.functional as F\n@torch.no_grad()\ndef evaluate(a, b):\n"
        "    return F.mse_loss(a, b).half()\nloss.backward()\n",
        "import torch\nimport torch.nn.functional as F\nwith torch.no_grad():\n    val = F.mse_loss(a, b).half()\n"
        "loss.backward()\n",
        "import torch.nn.functional as F\nloss = F.mse_loss(a.float(), b.float())\nloss.backward()\n",
        "import torch\nimport torch.nn.functional as F\nlogits = model(x).half()\nloss = F.cross_entropy(logits.float(), y)\nloss.backward()\n",
    )
    invalid = (
        Invalid(
            "import torch.nn.functional as F\ndef aux(a, b):\n    mse = F.mse_loss(a.float(), b.float())\n    return mse.half()\n"
            "loss = ce + aux(a, b)\nloss.backward()\n"
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nloss = F.cross_entropy(logits, y).to(torch.bfloat16)\nloss.backward()\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        # a program that never takes a gradient (evaluation): DTL505's concern, if any
        self._takes_gradients = bool(_CALLS_BACKWARD.search(self.ctx.text))

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Attribute) or not self._takes_gradients:
            return
        if self._without_grad(node):
            return  # ``@torch.no_grad()`` validation: no gradient flows back through the cast
        dtype = self._low_cast(node)
        if dtype is None:
            return
        loss = self._loss_call(node.func.value)
        if loss is None:
            return
        self.report(
            node,
            f"the loss `{call_name(loss)}(...)` (line {self.ctx.position(loss).start.line}) is cast to {dtype} by hand:"
            f" it keeps 3 significant digits (inf above 65504 in float16), and its gradient flows back through the"
            " cast into the float32 graph; keep losses in float32",
            confidence=Confidence.MEDIUM,
        )

    def _without_grad(self, node: cst.Call) -> bool:
        return without_grad(self.ctx, node)

    def _low_cast(self, node: cst.Call) -> str | None:
        method = node.func.attr.value
        if method in LOW_CASTS and not node.args:
            return LOW_CASTS[method]
        if method == "to" and len(node.args) == 1:
            value = node.args[0].value
            if isinstance(value, cst.Attribute) and self.ctx.names.matches(value.value, "torch"):
                return LOW_DTYPES.get(value.attr.value)
        return None

    def _loss_call(self, expr: cst.BaseExpression) -> cst.Call | None:
        """``F.mse_loss(...)`` itself, or a name assigned one just before."""
        candidates = [expr]
        if isinstance(expr, cst.Name):
            candidates = [value for value, _ in facts(self.ctx).reaching(expr)]
        for candidate in candidates:
            if isinstance(candidate, cst.Call) and call_name(candidate) in LOSS_FUNCTIONS \
                    and any(q.startswith("torch.nn.functional.") for q in self.ctx.names.qualified_names(candidate.func)):
                return candidate
        return None

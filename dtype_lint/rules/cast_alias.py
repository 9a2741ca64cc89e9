"""DTL407 cast-alias-original: `copy = model.half()` also casts `model` (a module cast works in
place and returns the module itself)."""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.flow.library import LOWP_TRIGGERS
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import walk
from dtype_lint.findings import Confidence
from dtype_lint.rules.base import Invalid, Rule

CAST_METHODS = frozenset({"half", "bfloat16", "float", "double", "to", "type"})


class CastAliasOriginal(Rule):
    """## What it does
    Flags `model_fp16 = model.half()` (also `.bfloat16()`, `.float()`, `.to(dtype)`) on a
    module when the file goes on to use `model` afterwards as if it still had its old dtype: a
    module cast changes the module in place and returns that same module, so both names hold the
    cast model. `copy.deepcopy(model).half()` and `model = model.half()` are not flagged.

    ## Why is this bad?
    The "float32 baseline" or the model that training goes on with is the float16 one too: it
    then raises `mat1 and mat2 must have the same dtype` on float32 inputs, or silently trains
    and evaluates in float16 (j-adamczyk/MLOps_course_AGH#14: `.half()` edited the original
    model; ultralytics' validators keep a copy for the same reason). Tensors behave the other
    way (`t.half()` is a new tensor), which is why the module form surprises.

    ## Example
    ```python
    model_fp16 = model.half()
    benchmark(model_fp16, x.half())
    baseline = model(x)
    ```

    ## Use instead
    ```python
    model_fp16 = copy.deepcopy(model).half()
    benchmark(model_fp16, x.half())
    baseline = model(x)
    ```

    ## Fix safety
    No fix: copying the model doubles its memory, which the author may not want.
    """

    code = "DTL407"
    name = "cast-alias-original"
    summary = "A module cast bound to a new name casts the original module too"
    queries = (
        "the dtype flow: the module's value before and after the cast (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    triggers = LOWP_TRIGGERS
    valid = (
        "import copy\nimport torch\nmodel = torch.nn.Linear(4, 4)\nhalf = copy.deepcopy(model).half()\nmodel(x)\n",
        "import torch\nmodel = torch.nn.Linear(4, 4)\nmodel = model.half()\nmodel(x.half())\n",
        "import torch\nx = torch.randn(4)\nx16 = x.half()\nprint(x.sum())\n",
    )
    invalid = (
        Invalid("import torch\nmodel = torch.nn.Linear(4, 4)\nmodel_fp16 = model.half()\nmodel_fp16(x.half())\nmodel(x)\n"),
        Invalid("import torch\nnet = torch.nn.Linear(4, 4)\nlow = net.to(torch.bfloat16)\nsave(low)\nstate = net.state_dict()\n"),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        call = node.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in CAST_METHODS):
            return
        receiver = call.func.value
        original = dotted_name(receiver) if isinstance(receiver, (cst.Name, cst.Attribute)) else None
        alias = node.targets[0].target.value
        if original is None or original == alias:
            return
        flow = self.ctx.flow
        before, after = flow.value_of(receiver), flow.value_of(call)
        if before is None or after is None or before.kind != "module" or after.kind != "module":
            return
        if not after.dtypes or not before.dtypes or after.dtypes == before.dtypes:
            return
        use = self._later_use(node, original)
        if use is None:
            return
        line = self.ctx.position(use).start.line
        self.report(
            call,
            f"`{self.ctx.code_for(call)}` casts `{original}` itself (a module cast works in place and returns the"
            f" same module): `{alias}` and `{original}` are one {after.describe()} model, and line {line} uses"
            f" `{original}` as if it were still {before.describe()}; cast a copy (`copy.deepcopy({original})`)",
            confidence=Confidence.MEDIUM,
        )

    def _later_use(self, assign: cst.Assign, original: str) -> cst.CSTNode | None:
        """The first use of ``original`` after ``assign`` in its function (or the module), unless
        it is rebound first."""
        scope = self.ctx.enclosing(assign, cst.FunctionDef) or self.ctx.module
        end = self.ctx.source_order(assign)[1]
        found = []
        for node in walk(scope):
            if isinstance(node, (cst.Name, cst.Attribute)) and dotted_name(node) == original:
                start = self.ctx.source_order(node)[0]
                if start > end:
                    found.append((start, node))
        for _, node in sorted(found, key=lambda pair: pair[0]):
            parent = self.ctx.parent(node)
            if isinstance(parent, cst.AssignTarget):
                return None  # rebound before any use
            return node  # ``model(x)``, ``model.state_dict()``, ``f(model)``
        return None

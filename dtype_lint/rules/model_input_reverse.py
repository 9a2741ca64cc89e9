"""DTL101 in the other direction: DTL108 fp32-model-lowp-input (a float32 model fed a float16 or
bfloat16 tensor outside autocast)."""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.dtypes import BF16, FP16, FP32
from dtype_lint.facts.flow.library import LOWP_TRIGGERS
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import training_facts
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.model_input import (
    LowpModelFp32Input,
    _root_name,
    arguments,
    callee_module,
    code,
    dtype_phrase,
    forward_casts_inputs,
    is_loss_module,
    part_meets_here,
    suffix_edit,
)


# Calls that hand back a model whose forward is autocast-wrapped or casts its inputs.
WRAPPERS = frozenset({"prepare", "prepare_model", "unwrap_model", "initialize", "setup", "wrap"})


class Fp32ModelLowpInput(Rule):
    """## What it does
    Flags a call of a float32 model (a `torch.nn` layer or a module class of this file, float32
    on every path: never cast, or cast back with `.float()`) on a tensor that is float16 or
    bfloat16 on every path, outside autocast: `model.float()` followed by `img.half()`. A model
    that went through `accelerator.prepare`, `unwrap_model`, `deepspeed.initialize` or a
    Lightning `setup` is skipped: those wrap its forward in autocast. Inside a module's
    `forward`, `self.head(x)` is reported when `x` is the output of a submodule cast apart from
    the rest (`self.wte.to(torch.bfloat16)` in an `init_weights()` the program calls, or
    `model.encoder.half()` in another file) and `self.head` is float32; a model one of whose
    parts was cast is not judged at its own call (the input may be meant for that part).

    ## Why is this bad?
    The mirror image of DTL101: the first layer fails with `mat1 and mat2 must have the same
    dtype, but got Half and Float` (`Input type (c10::Half) and bias type (float) should be the
    same` for a conv). It happens when the input's cast outlives the model's, e.g. a detector
    evaluated with `--half` after the model was put back to float32 for training (yolov5's
    `model.float()` in `train.py` while the dataloader still produces `img.half()`).

    ## Example
    ```python
    model = Net().to(device).float()
    img = img.to(device).half()
    pred = model(img)
    ```

    ## Use instead
    ```python
    pred = model(img.float())   # or cast both, or run under torch.autocast
    ```

    ## Fix safety
    Unsafe: it appends `.float()` to the input, which changes its dtype for everything the
    model returns. High confidence when both dtypes are certain and the model is a torch layer
    or a class of this file, medium otherwise.
    """

    code = "DTL108"
    name = "fp32-model-lowp-input"
    summary = "float32 model called on a float16/bfloat16 tensor outside autocast"
    fix_safety = Safety.UNSAFE
    triggers = LOWP_TRIGGERS
    valid = (
        "import torch\nmodel = torch.nn.Linear(10, 2).half()\nx = torch.randn(1, 10).half()\nmodel(x)\n",
        "import torch\nmodel = torch.nn.Linear(10, 2)\nx = torch.randn(1, 10).half()\nwith torch.autocast('cuda'):\n    model(x)\n",
        "import torch\nmodel = torch.nn.Linear(10, 2).float()\nx = torch.randn(1, 10).half()\nmodel(x.float())\n",
        # accelerate wraps the prepared model's forward in autocast (accelerate's own test script)
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n"
        "model = accelerator.prepare(torch.nn.Linear(2, 4))\nwrapped = accelerator.unwrap_model(model, keep_fp32_wrapper=True)\n"
        "wrapped(torch.ones(2).half())\n",
    )
    invalid = (
        Invalid(
            "import torch\nmodel = torch.nn.Linear(10, 2)\nmodel.float()\nimg = torch.randn(1, 10).half()\nout = model(img)\n",
            fixed="import torch\nmodel = torch.nn.Linear(10, 2)\nmodel.float()\nimg = torch.randn(1, 10).half()\nout = model(img.float())\n",
        ),
        Invalid(
            "import torch\nnet = torch.nn.Conv2d(3, 8, 3).cuda()\nx = torch.rand(1, 3, 32, 32, dtype=torch.bfloat16).cuda()\nnet(x)\n",
            fixed="import torch\nnet = torch.nn.Conv2d(3, 8, 3).cuda()\nx = torch.rand(1, 3, 32, 32, dtype=torch.bfloat16).cuda()\nnet(x.float())\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        module, module_node = callee_module(self.ctx, node)
        if module is None or not module.only(FP32) or is_loss_module(module) or module.role == "quantized":
            return
        if not LowpModelFp32Input._own_or_torch(module) or module.parts:
            return  # a model with a low part (``model.vision.half()``) may take low inputs
        inside = _root_name(module_node) == "self"  # reported at the caller, unless a part meets the rest here
        if self.ctx.flow.autocast_at(node) is not None or forward_casts_inputs(self.ctx, module):
            return
        if self._wrapped(module_node):
            return
        for arg in arguments(node):
            if arg.star or arg.keyword is not None:
                continue
            value = self.ctx.flow.value_of(arg.value)
            if value is None or value.kind != "tensor" or value.autocast is not None:
                continue
            low = FP16 if value.only(FP16) else BF16 if value.only(BF16) else None
            if low is None or inside and not part_meets_here(self.ctx, module_node, value, low):
                continue
            confidence = Confidence.HIGH if module.certain and value.certain else Confidence.MEDIUM
            message = (
                f"`{code(self.ctx, module_node)}` is {dtype_phrase(module)}, but `{code(self.ctx, arg.value)}` is "
                f"{dtype_phrase(value)} and no autocast region is active: the call fails with a dtype mismatch "
                "(mat1 and mat2 must have the same dtype); cast the input to float32, or cast both, or use autocast"
            )
            fix = Fix(Safety.UNSAFE, (suffix_edit(self, arg.value, ".float()"),), "cast the input to float32")
            self.report(arg.value, message, confidence=confidence, fix=fix)
            return

    def _wrapped(self, module_node: cst.BaseExpression) -> bool:
        """The model went through a wrapper that runs its forward under autocast or casts its
        inputs: ``accelerator.prepare(model)`` with mixed precision, ``unwrap_model(model,
        keep_fp32_wrapper=True)``, ``deepspeed.initialize``. Breadth-first over the names the
        model was assigned from, each name once: following every assignment of every name
        again at each level is exponential in files that reassign one name many times."""
        assignments = training_facts(self.ctx).assignments
        seen: set[str] = set()
        names = [dotted_name(module_node)]
        for _ in range(5):
            sources: list[str | None] = []
            for name in names:
                if name is None or name in seen:
                    continue
                seen.add(name)
                for _, value in assignments.get(name, []):
                    if not isinstance(value, cst.Call):
                        continue
                    if (dotted_name(value.func) or "").rsplit(".", 1)[-1] in WRAPPERS:
                        return True
                    if value.args:
                        sources.append(dotted_name(value.args[0].value))
            names = sources
        return False

"""DTL401-DTL405: casting parameters, gradients and whole models by hand while an optimizer
trains them.

The dtype flow gives each optimizer the dtype its parameters had when it was built
(``ctx.flow.optimizers``), every module cast with the value before it (``ctx.flow.module_casts``)
and the role of loop variables over ``model.parameters()``.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re

import libcst as cst

from dtype_lint.facts import branch_conditions, numerics, pipelines
from dtype_lint.facts.devices import argparse_default
from dtype_lint.facts.numerics import number
from dtype_lint.facts.amp import dtype_literal
from dtype_lint.facts.dtypes import BF16, FP16, LONG_NAMES, LOW, Cast, OptimizerInfo
from dtype_lint.facts.flow.library import FP16_TRIGGERS, LOWP_TRIGGERS
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, calls_in, trains_only_requires_grad, training_facts
from dtype_lint.findings import Confidence
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.model_input import FP64_SPELLED, NUMPY_FP64, TORCH, code, dtype_phrase

# Prefilter: the flow records an optimizer (``flow.optimizers``) only for a class of ``torch.optim``
# (the word ``optim``) or one whose name matches library.OPTIMIZER_CLASS from transformers,
# bitsandbytes, apex, timm or deepspeed; the qualified name's last part is a code word.
OPTIMIZER_TRIGGERS = (
    "optim", "Optimizer", "Adam", "SGD", "RMSprop", "Adagrad", "Adadelta", "Lion", "Adafactor", "LAMB", "Lamb",
    "LBFGS", "Sophia", "Muon",
)
# A model whose dtype changes between two float dtypes holds one of float16, bfloat16 or float64
# (see model_input.FP64_SPELLED); torch's Module.to() refuses integer dtypes.
NOT_FP32_TRIGGERS = (LOWP_TRIGGERS + FP64_SPELLED + NUMPY_FP64, LOWP_TRIGGERS + FP64_SPELLED + (TORCH,))

EVAL_FUNCTION = re.compile(
    r"(^|_)(eval|evaluate|evaluation|validate|validation|val|valid|test|predict|inference|infer|generate|"
    r"sample|sampling)(_|$)",
    re.IGNORECASE,
)
NO_GRAD_DECORATOR = re.compile(r"(no_grad|inference_mode)")
FREEZES = re.compile(r"requires_grad_\(\s*False\s*\)|requires_grad\s*=\s*False")
NORM_LAYERS = re.compile(r"(BatchNorm\dd|LayerNorm|GroupNorm|RMSNorm|InstanceNorm\dd)")
ADAM = re.compile(r"Adam")
# Optimizers that keep their own fp32/8-bit state or master weights: eps in fp16 is not an issue.
OWN_STATE = re.compile(r"(bitsandbytes|bnb|apex|deepspeed|8bit|Fused|torchao)")
FP16_TINIEST = 6e-8
FP16_SMALLEST_NORMAL = 2.0 ** -14  # 6.1e-5


def _dtypes(dtypes) -> str:
    return " or ".join(LONG_NAMES[d] for d in ("fp32", "fp16", "bf16", "fp64", "int", "bool") if d in dtypes)


def _cast_of(ctx, node: cst.CSTNode) -> Cast | None:
    for cast in ctx.flow.module_casts:
        if cast.node is node:
            return cast
    return None


def _like_of(ctx, value: cst.BaseExpression, owner: cst.BaseExpression) -> bool:
    """``torch.zeros_like(owner)`` and friends without ``dtype=``: same dtype as ``owner`` by construction."""
    if not isinstance(value, cst.Call) or not value.args or value.args[0].keyword is not None:
        return False
    func = value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    if not (isinstance(name, str) and name.endswith("_like")):
        return False
    if any(arg.keyword is not None and arg.keyword.value == "dtype" for arg in value.args):
        return False
    return ctx.code_for(value.args[0].value) == ctx.code_for(owner)


def _is_eval_function(function: cst.FunctionDef | None) -> bool:
    if function is None:
        return False
    if EVAL_FUNCTION.search(function.name.value):
        return True
    for decorator in function.decorators:
        expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        name = expr.attr.value if isinstance(expr, cst.Attribute) else getattr(expr, "value", "")
        if isinstance(name, str) and NO_GRAD_DECORATOR.search(name):
            return True
    return False


def _line(ctx, node: cst.CSTNode) -> int:
    return ctx.position(node).start.line


def _optimizer_name(ctx, optimizer: OptimizerInfo) -> str:
    return optimizer.qualified if "." in optimizer.qualified else code(ctx, optimizer.node.func)


# -- DTL401 -----------------------------------------------------------------------------------
# An optimizer eps raised this far above Adam's 1e-8 default was chosen for float16 weights.
DELIBERATE_FP16_EPS = 1e-5


class HalfWholeModelTrain(Rule):
    """## What it does
    Flags `model.half()` / `model.to(torch.float16)` / `model.type(torch.HalfTensor)` on a model
    whose parameters an optimizer then trains (`torch.optim.AdamW(model.parameters())`), with no
    adapters (PEFT) and no frozen parameters in the file. An Adam-family optimizer given an eps
    of at least float16's smallest normal number, 6.1e-5 (`eps=1e-4`, the fix of
    afiaka87/glide-finetune#5), marks pure float16 training chosen on purpose and set up for it:
    not flagged (DTL404 covers eps below float16's range; an eps such as 1e-6, common in float32
    recipes, says nothing about float16 and keeps the finding; one of 1e-5 or more gives a low
    confidence finding). Nor is an optimizer that takes
    the model's parameters only on the runs where the flag that halves the model is off
    (`params = masters if args.pure_fp16 else model.parameters()` after `if args.pure_fp16:
    model.half()`): apex-O2 style float32 master weights (also for DTL302 and DTL404).

    ## Why is this bad?
    Pure fp16 training stores weights, gradients and optimizer state in float16: updates smaller
    than half an ulp vanish, gradients below 6e-8 flush to zero, Adam's second moment underflows,
    and norm layers (BatchNorm/LayerNorm/RMSNorm statistics such as `x.pow(2).mean()`) overflow
    to inf. Mixed precision (float32 weights + `torch.autocast` + `GradScaler`) trains at the same
    speed without these failures; it is what the PyTorch AMP docs prescribe.

    ## Example
    ```python
    model = Net().cuda().half()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ```

    ## Use instead
    ```python
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x)
    ```

    ## Fix safety
    No fix: moving to autocast changes the training loop.
    """

    code = "DTL401"
    name = "half-whole-model-train"
    summary = "Whole model cast to float16 and then trained"
    queries = (
        "the dtype flow: every module cast, and the optimizers with the dtype of the parameters they train (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the optimizer's eps as a number, through constants and argparse defaults (facts/numerics.py, facts/devices.py `argparse_default`)",
        "whether the optimizer takes the low-precision parameters only on runs where the cast does not happen (facts/branch_conditions.py)",
    )
    # The optimizer's parameters must be float16 (``FP16 in params.dtypes``); an optimizer must exist.
    triggers = FP16_TRIGGERS
    required_triggers = (OPTIMIZER_TRIGGERS,)
    valid = (
        "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.AdamW(model.parameters())\n",
        "import torch\nmodel = torch.nn.Linear(4, 4).half()\nmodel.eval()\nwith torch.no_grad():\n    y = model(x)\n",
        "import torch\nfrom peft import get_peft_model\nmodel = Net().half()\nmodel = get_peft_model(model, cfg)\nopt = torch.optim.AdamW(model.parameters())\n",
        "import torch\nmodel = torch.nn.Linear(4, 4).bfloat16()\nopt = torch.optim.AdamW(model.parameters())\n",
    )
    invalid = (
        Invalid("import torch\nmodel = torch.nn.Linear(4, 4).cuda().half()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"),
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.norm = nn.LayerNorm(8)\nnet = Net()\nif args.fp16:\n    net.half()\n"
            "optimizer = torch.optim.AdamW(net.parameters())\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        flow = self.ctx.flow
        if FREEZES.search(self.ctx.text):
            return
        reported: set[int] = set()
        for optimizer in flow.optimizers:
            params = optimizer.params
            if params is None or FP16 not in params.dtypes or params.role in ("peft", "quantized"):
                continue
            if _fp16_aware_eps(self.ctx, optimizer):
                continue
            origin = params.origin_of(FP16)
            if branch_conditions.chosen_against(self.ctx, optimizer.node, origin.node if origin else None):
                continue
            cast_node = origin.node if origin is not None else None
            if not self._is_module_cast(cast_node) or id(cast_node) in reported:
                continue
            reported.add(id(cast_node))
            target = optimizer.target or code(self.ctx, cast_node.func.value)
            norms = NORM_LAYERS.findall(self.ctx.text)
            norm_note = f"; its {sorted(set(norms))[0]} layers also run their statistics in float16" if norms else ""
            confidence = Confidence.HIGH if params.certain else Confidence.MEDIUM
            eps = numerics.number(self.ctx, optimizer.eps) if optimizer.eps is not None else None
            if eps is not None and eps.value >= DELIBERATE_FP16_EPS:
                # Adam's eps raised for float16 (glide-finetune's fix): float16 training on purpose
                confidence = Confidence.LOW
            self.report(
                cast_node,
                f"`{target}` is cast to float16 here and then trained by `{_optimizer_name(self.ctx, optimizer)}` "
                f"(line {_line(self.ctx, optimizer.node)}): weights, gradients and optimizer state in float16 lose small "
                f"updates and overflow{norm_note}. Keep float32 weights and use torch.autocast + GradScaler",
                confidence=confidence,
            )

    def _is_module_cast(self, node) -> bool:
        """``x.half()`` / ``x.to(torch.float16)`` / ``x.type(torch.HalfTensor)`` on a module."""
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            return False
        if node.func.attr.value not in ("half", "to", "type"):
            return False
        if _cast_of(self.ctx, node) is not None:
            return True
        receiver = self.ctx.flow.value_of(node.func.value)
        return receiver is not None and receiver.kind == "module"


# -- DTL402 -----------------------------------------------------------------------------------
def _c10_name(dtypes) -> str:
    """How torch's error names the gradient's dtype: ``c10::Half``, ``c10::BFloat16``."""
    return "c10::BFloat16" if BF16 in dtypes and FP16 not in dtypes else "c10::Half"


class ParamDtypeAssign(Rule):
    """## What it does
    Flags assignments that downcast a trainable parameter or its gradient by hand inside a loop
    over `model.parameters()` / `model.named_parameters()`: `param.data = param.data.half()`,
    `param.grad = param.grad.half()`, `p.data = p.data.to(torch.bfloat16)`.

    ## Why is this bad?
    A gradient must have its parameter's dtype: assigning a float16 gradient to a float32
    parameter raises `attempting to assign a gradient with dtype 'c10::Half' to a tensor with
    grad_dtype 'Float'`. Rewriting `param.data` behind the optimizer's back leaves its state
    (Adam moments) in the old dtype and puts trainable weights in float16, where small updates
    vanish. Keep trainable parameters in float32 (PEFT upcasts them) and let autocast choose the
    compute dtype. These are the "fixes" a well-known blog post recommends for `expected scalar
    type Half but found Float`.

    ## Example
    ```python
    for name, param in model.named_parameters():
        if param.dtype != torch.float16:
            param.data = param.data.half()
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        outputs = model(**inputs)
    ```

    ## Fix safety
    No fix: the right change is to stop casting, which depends on the rest of the loop.
    """

    code = "DTL402"
    name = "param-dtype-assign"
    summary = "Parameter or gradient downcast by hand"
    queries = (
        "the dtype flow: the parameter or gradient assigned and the dtype of the value assigned to it, and the file's optimizers (facts/dtypes.py, computed by facts/flow/interpreter.py)",
    )
    # An assignment to ``.data``/``.grad`` of a float16/bfloat16 value (``value.dtypes <= LOW``) whose
    # target has the "param" role: a loop over ``parameters()``, ``nn.Parameter``, ``.weight``/``.bias``.
    triggers = (exact_word("data"), exact_word("grad"))
    required_triggers = (LOWP_TRIGGERS, ("parameters", exact_word("Parameter"), exact_word("weight"), exact_word("bias")))
    valid = (
        "import torch\nfor p in model.parameters():\n    if p.requires_grad:\n        p.data = p.data.float()\n",
        "import torch\nfor p in model.parameters():\n    p.grad = None\n",
        "import torch\nmodel = Net().half()\nfor p in model.parameters():\n    p.data = p.data.half()\n",
        "import torch\nmodel = Net()\nfor p in model.parameters():\n    p.data = p.data.half()\ntorch.save(model.state_dict(), 'fp16.pt')\n",
    )
    invalid = (
        Invalid(
            "import torch\nfor name, param in model.named_parameters():\n    if param.dtype != torch.float16:\n"
            "        param.data = param.data.half()\noptimizer = torch.optim.AdamW(model.parameters())\n"
        ),
        Invalid(
            "import torch\nloss.backward()\nfor param in model.parameters():\n    if param.grad is not None:\n"
            "        param.grad = param.grad.half()\n"
        ),
        Invalid(
            "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor p in model.parameters():\n"
            "    p.data = p.data.to(torch.bfloat16)\n"
        ),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if not isinstance(target, cst.Attribute) or target.attr.value not in ("data", "grad"):
            return
        if _like_of(self.ctx, node.value, target.value):
            return  # `p.grad = torch.ones_like(p)`: a factory that takes p's dtype, not a cast
        flow = self.ctx.flow
        param = flow.value_of(target.value)
        value = flow.value_of(node.value)
        if param is None or param.role != "param" or value is None or not value.dtypes or not value.dtypes <= LOW:
            return
        if self._keeps_own_dtype(node, target.value, value.dtypes):
            return  # cast to the dtype the parameter is tested to have: its dtype does not change
        guarded = self._dtype_guard(node)
        what = "gradient" if target.attr.value == "grad" else "parameter"
        layer = _layer_of(target.value)
        if what == "parameter" and not flow.optimizers and ".backward(" not in self.ctx.text:
            if layer is not None and param.certain and param.dtypes.isdisjoint(value.dtypes):
                # one layer's weights replaced by a tensor of another dtype (a loaded checkpoint):
                # no cast happens, and the layer no longer matches the model around it
                self.report(
                    node,
                    f"`{code(self.ctx, target)}` is assigned a {_dtypes(value.dtypes)} tensor ({dtype_phrase(value)}) "
                    f"while `{code(self.ctx, target.value)}` is {dtype_phrase(param)}: `.data =` replaces the weights "
                    f"without a cast, so `{code(self.ctx, layer)}` now computes in {_dtypes(value.dtypes)} and fails on "
                    f"the model's {LONG_NAMES.get(param.dtype, param.dtype)} activations (mat1 and mat2 must have the "
                    f"same dtype); cast it (`.to({code(self.ctx, target.value)}.dtype)`) or use `.data.copy_(...)`",
                    confidence=Confidence.MEDIUM,
                )
            return  # converting weights for export or inference is not training
        new = _dtypes(value.dtypes)
        if param.certain and param.dtype in value.dtypes and not guarded:
            if what == "parameter":
                return  # a no-op cast of a parameter that already has this dtype
            # A no-op here only because the whole model already trains in low precision (DTL401);
            # with float32 master weights the same line raises.
            self.report(
                node,
                f"`{code(self.ctx, target)}` is cast to {new} by hand: a no-op only because `{code(self.ctx, target.value)}` "
                f"is already {dtype_phrase(param)}; with float32 parameters (autocast training) it raises "
                f"(attempting to assign a gradient with dtype '{_c10_name(value.dtypes)}' to a tensor with grad_dtype 'Float'). "
                f"Remove it; gradients always have their parameter's dtype",
                confidence=Confidence.MEDIUM,
            )
            return
        if param.known and param.dtypes.isdisjoint(value.dtypes) and param.certain:
            confidence, before = Confidence.HIGH, f"{dtype_phrase(param)}"
        elif guarded:
            confidence, before = Confidence.HIGH, "not " + new + " (the `if` tests its dtype)"
        else:
            confidence, before = Confidence.MEDIUM, "of a dtype this file does not fix"
        name = code(self.ctx, target.value)
        if what == "gradient":
            consequence = (
                "a gradient must match its parameter's dtype (attempting to assign a gradient with dtype "
                f"'{_c10_name(value.dtypes)}' to a tensor with grad_dtype 'Float')"
                + (", and float16 gradients underflow" if FP16 in value.dtypes else "")
            )
        else:
            consequence = (
                "the optimizer's state keeps the old dtype and the trainable weights lose small updates in "
                "low precision"
            )
        self.report(
            node,
            f"`{code(self.ctx, target)}` is assigned a {new} {what} while `{name}` (a trainable parameter from "
            f"`.parameters()`) is {before}: {consequence}. Keep trainable parameters in float32 and use autocast",
            confidence=confidence,
        )

    def _keeps_own_dtype(self, node: cst.Assign, param: cst.BaseExpression, dtypes: frozenset) -> bool:
        """The low value is chosen only where ``param`` already has that dtype: OpenNMT's
        ``p.data = avg.half() if p.dtype == torch.float16 else avg`` (the cast is the branch under the
        test), or the same test in an enclosing ``if`` around the assignment."""
        if isinstance(node.value, cst.IfExp) and self._tests_dtype_is(node.value.test, param, dtypes):
            return True
        child, current = node, self.ctx.parent(node)
        while current is not None and not isinstance(current, (cst.For, cst.FunctionDef)):
            if isinstance(current, cst.If) and child is current.body and self._tests_dtype_is(current.test, param, dtypes):
                return True
            child, current = current, self.ctx.parent(current)
        return False

    def _tests_dtype_is(self, test: cst.BaseExpression, param: cst.BaseExpression, dtypes: frozenset) -> bool:
        """``param.dtype == D`` (or ``is``) with D the one low dtype of ``dtypes``."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, (cst.Equal, cst.Is))):
            return False
        left, right = test.left, test.comparisons[0].comparator
        for side, other in ((left, right), (right, left)):
            if (isinstance(side, cst.Attribute) and side.attr.value == "dtype"
                    and self.ctx.code_for(side.value) == self.ctx.code_for(param)):
                literal = dtype_literal(self.ctx.names, other)
                return literal is not None and {LONG_NAMES[d] for d in dtypes} == {literal}
        return False

    def _dtype_guard(self, node: cst.CSTNode) -> bool:
        current = self.ctx.parent(node)
        while current is not None and not isinstance(current, (cst.For, cst.FunctionDef)):
            if isinstance(current, cst.If) and "dtype" in self.ctx.code_for(current.test):
                return True
            current = self.ctx.parent(current)
        return False


# -- DTL403 -----------------------------------------------------------------------------------
class DtypeToggleWithOptimizer(Rule):
    """## What it does
    Flags a cast of a whole model (`model.float()`, `model.half()`, `model.to(torch.bfloat16)`)
    inside a training loop, after an optimizer was built over that model's parameters in another
    dtype, when the loop does not cast it back; a cast of a wrapper's `.module` (DDP,
    DataParallel: `model.module.half()`) casts the wrapped model. Also a library pipeline that holds the model
    being trained (`Pipe.from_pretrained(..., unet=accelerator.unwrap_model(unet))`) moved with a
    low-precision dtype in the loop (`pipeline.to(device, dtype=weight_dtype)`, inline or in a
    validation helper of the same file): that cast reaches every component, the trained one
    included (huggingface/diffusers#13895, #9565), also when a helper of the file builds the
    pipeline from the trained module it is given, casts it, and is called from the training loop
    (reported at the cast), while `from_pretrained`'s own `torch_dtype`
    leaves passed modules alone (diffusers hands a passed component through as it is). In a
    project check the validation helper may live in another file (`log_validation(pipeline, args,
    accelerator, weight_dtype)` in validation.py): the finding is then at the loop's optimizer
    step and names the helper's cast.

    ## Why is this bad?
    Module casts replace `param.data` in place, but the optimizer state (Adam's `exp_avg`,
    `exp_avg_sq`) stays in the dtype it was created in. The next `optimizer.step()` mixes dtypes
    (`expected dtype c10::Half for `end` but got dtype float`) or silently runs the update in the
    wrong precision.

    ## Example
    ```python
    model.half()
    optimizer = torch.optim.Adam(model.parameters())
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            model.float()
            log_metrics(model)
    ```

    ## Use instead
    ```python
    if step % 100 == 0:
        with torch.autocast("cuda", enabled=False):
            log_metrics(model)  # or cast back with model.half() right after
    ```

    ## Fix safety
    No fix.
    """

    code = "DTL403"
    name = "dtype-toggle-with-optimizer"
    summary = "Model dtype changed in a training loop after its optimizer was built"
    queries = (
        "the dtype flow: the casts of each model and the optimizers built over its parameters, in program order (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "library pipelines that share the module being trained, and their casts (facts/pipelines.py)",
        "the file's loops and calls (facts/training.py)",
    )
    # An optimizer, and a cast to another dtype than its parameters': two float dtypes, one not float32.
    triggers = OPTIMIZER_TRIGGERS
    required_triggers = NOT_FP32_TRIGGERS
    valid = (
        "import torch\nmodel = torch.nn.Linear(4, 4)\nopt = torch.optim.Adam(model.parameters())\nfor x in loader:\n"
        "    model(x).sum().backward()\n    opt.step()\nmodel.half()\n",
        "import torch\nmodel = torch.nn.Linear(4, 4).half()\nopt = torch.optim.Adam(model.parameters())\nfor x in loader:\n"
        "    model.float()\n    log(model)\n    model.half()\n    opt.step()\n",
    )
    invalid = (
        Invalid(
            "import torch\nmodel = torch.nn.Linear(4, 4).half()\nopt = torch.optim.Adam(model.parameters())\nfor x in loader:\n"
            "    model(x).sum().backward()\n    opt.step()\n    model.float()\n"
        ),
        Invalid(
            "import torch\nmodel = torch.nn.Linear(4, 4)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nwhile True:\n"
            "    model.to(torch.bfloat16)\n    opt.step()\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        flow = self.ctx.flow
        for cast in flow.module_casts:
            if not cast.dtypes or _is_eval_function(cast.function):
                continue
            loop = self._loop_with_step(cast.node)
            if loop is None:
                continue
            for optimizer in flow.optimizers:
                params = optimizer.params
                if _wrapped(optimizer.target) != _wrapped(cast.target) or params is None or not params.dtypes \
                        or optimizer.order >= cast.order:
                    continue
                if cast.dtypes == params.dtypes or self._restored(cast, params.dtypes, loop):
                    continue
                certain = params.certain and len(cast.dtypes) == 1
                self.report(
                    cast.node,
                    f"`{cast.target}` is cast to {_dtypes(cast.dtypes)} inside the training loop, but "
                    f"`{_optimizer_name(self.ctx, optimizer)}` (line {_line(self.ctx, optimizer.node)}) was built over its "
                    f"{dtype_phrase(params)} parameters: the optimizer state keeps the old dtype, so the next step mixes "
                    f"dtypes (Adam: expected dtype {_c10_name(cast.dtypes)} for `end` but got dtype float) or updates in the wrong "
                    f"precision. Cast back, or use autocast",
                    confidence=Confidence.HIGH if certain else Confidence.MEDIUM,
                )
                break
        self._shared_pipeline_casts()

    def _shared_pipeline_casts(self) -> None:
        """``pipeline.to(device, dtype=weight_dtype)`` on a pipeline holding the trained module."""
        shared_casts = pipelines.shared_module_casts(self.ctx)
        through_helpers = {id(shared.cast) for shared in shared_casts if shared.site is not shared.cast}
        for shared in shared_casts:
            loop = self._loop_with_step(shared.site)
            if loop is None and shared.helper is None and shared.site is shared.cast:
                # built and cast in a helper from the module it is given (``log_validation(unet, ...)``):
                # the training loop is the caller's
                shared, loop = self._called_from_loop(shared)
            if loop is None:
                if id(shared.cast) in through_helpers:
                    continue  # the caller's pipeline handed to this helper: reported through the call
                # a validation helper that builds the pipeline from the trained module it is
                # given and casts it, called from the training loop
                called = self._called_in_training_loop(shared.site)
                if called is None:
                    continue
                self.report(
                    shared.cast,
                    f"this casts the pipeline built at line {_line(self.ctx, shared.pipeline)}, which holds `{shared.module}`,"
                    f" the module the training loop trains (this function is called at line {_line(self.ctx, called)}):"
                    " `.to(dtype=...)` casts every component, so the trained weights become low precision mid-training"
                    " and stay so after validation; move the pipeline with `.to(device)` only",
                    confidence=Confidence.MEDIUM,
                )
                continue
            if shared.helper is not None:
                self._report_helper_cast(shared, loop)
                continue
            through = "" if shared.site is shared.cast else f" (called from line {_line(self.ctx, shared.site)})"
            self.report(
                shared.cast,
                f"this casts the pipeline built at line {_line(self.ctx, shared.pipeline)}, which holds `{shared.module}`"
                f" while an optimizer trains it{through}: `.to(dtype=...)` casts every component, so the trained"
                " weights (float32 LoRA/master parameters) become low precision mid-training (\"Attempting to"
                " unscale FP16 gradients.\" at the next step); move the pipeline with `.to(device)` only",
                confidence=Confidence.MEDIUM,
            )

    def _called_from_loop(self, shared):
        """(the cast reached from a call in a training loop, that loop) when the pipeline's module
        is a parameter of the function the cast is in and a loop of this file passes it the trained
        module (by position or keyword); else (shared, None)."""
        from dtype_lint.facts.passed_models import _argument

        function = self.ctx.enclosing(shared.cast, cst.FunctionDef)
        if function is None or self.ctx.enclosing(function, cst.ClassDef) is not None:
            return shared, None
        params = [p.name.value for p in function.params.params]
        if shared.module not in params:
            return shared, None
        trained = pipelines.trained_modules(self.ctx)
        for call in training_facts(self.ctx).calls:
            if not isinstance(call.func, cst.Name) or call.func.value != function.name.value:
                continue
            given = _argument(call, shared.module, params.index(shared.module))
            loop = self._loop_with_step(call)
            if loop is not None and given is not None and dotted_name(given) in trained:
                return dataclasses.replace(shared, site=call), loop
        return shared, None

    def _report_helper_cast(self, shared, loop) -> None:
        """The pipeline is cast by a helper of another file: reported at the loop's optimizer step,
        the one that then runs on low-precision trained weights."""
        step = next((c for c in calls_in(loop.body) if call_name(c) == "step"), None)
        base = posixpath.dirname(self.ctx.path)
        self.report(
            step if step is not None else shared.site,
            f"this step trains `{shared.module}`, but line {_line(self.ctx, shared.site)} hands the pipeline built at"
            f" line {_line(self.ctx, shared.pipeline)}, which holds it, to {shared.helper.describe(base)}: `.to(dtype=...)`"
            " casts every component, so the trained weights (float32 LoRA/master parameters) become low precision"
            " mid-training (\"Attempting to unscale FP16 gradients.\" at the next step); move the pipeline with"
            " `.to(device)` only",
            confidence=Confidence.MEDIUM,
        )

    def _called_in_training_loop(self, node: cst.CSTNode) -> cst.Call | None:
        """A call, inside a training loop of this file, of the function ``node`` is in."""
        function = self.ctx.enclosing(node, cst.FunctionDef)
        if function is None:
            return None
        for call in training_facts(self.ctx).calls:
            if isinstance(call.func, cst.Name) and call.func.value == function.name.value \
                    and self._loop_with_step(call) is not None:
                return call
        return None

    def _loop_with_step(self, node: cst.CSTNode) -> cst.CSTNode | None:
        current = self.ctx.parent(node)
        while current is not None and not isinstance(current, (cst.FunctionDef, cst.Module)):
            if isinstance(current, (cst.For, cst.While)) and ".step(" in self.ctx.code_for(current):
                return current
            current = self.ctx.parent(current)
        return None

    def _restored(self, cast: Cast, original, loop) -> bool:
        loop_start = _line(self.ctx, loop)
        loop_end = self.ctx.position(loop).end.line
        cast_line = _line(self.ctx, cast.node)
        for other in self.ctx.flow.casts_of(cast.target):
            if other is cast or other.dtypes != original:
                continue
            line = _line(self.ctx, other.node)
            if loop_start <= line <= loop_end and line != cast_line:
                return True
        return False


# -- DTL404 -----------------------------------------------------------------------------------
class Fp16AdamEps(Rule):
    """## What it does
    Flags `Adam`/`AdamW` (torch, transformers) built over float16 parameters with the default
    `eps=1e-8` or any eps below 6e-8, written as a literal, a constant of the file, or a flag
    whose argparse default it is (`eps=args.adam_epsilon` with `add_argument("--adam_epsilon",
    default=1e-08)`: medium at most, the runs that keep the default). High confidence when the parameters are float16 on every
    path; low when only part of the model is float16 and the optimizer gets only the parameters
    that require grad (a frozen float16 base under float32 adapters); medium otherwise.
    Whole-program (medium): an optimizer helper given an instance of a class that halves itself
    or a submodule in `__init__` under a flag (`make_optimizer(args, Model(args))`), and the
    `configure_optimizers` of a class trained by DeepSpeed's `"fp16"` config or Lightning's
    `precision="16-true"` in another file.

    ## Why is this bad?
    float16's smallest subnormal is 6e-8: `1e-8` rounds to 0 in the parameter's dtype. Wherever
    the second-moment estimate is zero (a parameter that got no gradient, an underflowed one)
    the update divides 0 by 0 and writes NaN into the weights; anomaly mode does not see it,
    because it happens in the optimizer. Training needs float32 master weights (autocast with
    float32 parameters); `eps=1e-4`-ish is only a stopgap.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained(name)  # float32 weights
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    # train under torch.autocast("cuda", dtype=torch.float16) with a GradScaler
    ```

    ## Fix safety
    No fix: the remedy is float32 master weights.
    """

    code = "DTL404"
    name = "fp16-adam-eps"
    summary = "Adam/AdamW with eps below float16's range over float16 parameters"
    queries = (
        "the dtype flow: the optimizers and the dtype of the parameters each is built over (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the optimizer's eps as a number, through constants and argparse defaults (facts/numerics.py)",
        "whether the optimizer gets only the parameters that require grad (facts/training.py), and whether it takes the float16 parameters only on runs where the cast does not happen (facts/branch_conditions.py)",
    )
    # An Adam-named optimizer (``ADAM.search``) over float16 parameters (``FP16 in params.dtypes``).
    triggers = ("Adam",)
    required_triggers = (FP16_TRIGGERS,)
    valid = (
        "import torch\nmodel = torch.nn.Linear(4, 4)\nopt = torch.optim.AdamW(model.parameters())\n",
        "import torch\nmodel = torch.nn.Linear(4, 4).half()\nopt = torch.optim.AdamW(model.parameters(), eps=1e-4)\n",
        "import torch\nmodel = torch.nn.Linear(4, 4).bfloat16()\nopt = torch.optim.Adam(model.parameters())\n",
        "import bitsandbytes as bnb\nimport torch\nmodel = torch.nn.Linear(4, 4).half()\nopt = bnb.optim.Adam8bit(model.parameters())\n",
    )
    invalid = (
        Invalid("import torch\nmodel = torch.nn.Linear(4, 4).half()\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"),
        Invalid(
            "import torch\nfrom transformers import AutoModelForCausalLM\nmodel = AutoModelForCausalLM.from_pretrained('gpt2', dtype=torch.float16)\n"
            "opt = torch.optim.Adam(model.parameters(), eps=1e-8)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        for optimizer in self.ctx.flow.optimizers:
            params = optimizer.params
            name = optimizer.qualified.rsplit(".", 1)[-1]
            if not ADAM.search(name) or OWN_STATE.search(optimizer.qualified):
                continue
            if params is None or FP16 not in params.dtypes or params.role in ("peft", "quantized"):
                continue
            origin = params.origin_of(FP16)
            if branch_conditions.chosen_against(self.ctx, optimizer.node, origin.node if origin else None):
                continue
            confidence = self._confidence(params, optimizer)
            if optimizer.eps is None:
                eps_text = "the default eps=1e-8"
            else:
                eps = numerics.number(self.ctx, optimizer.eps)
                if eps is None or eps.value >= FP16_TINIEST:
                    continue
                eps_text = f"eps={code(self.ctx, optimizer.eps)}"
                if not eps.literal:
                    eps_text += f" ({eps.value:g}, {eps.where(self.ctx)})"
                    if _in_call(self.ctx, eps.node, "add_argument"):
                        # a command-line default: the configuration the program runs in unless told otherwise
                        confidence = min(confidence, Confidence.MEDIUM)
            self.report(
                optimizer.node,
                f"`{_optimizer_name(self.ctx, optimizer)}` updates float16 parameters ({dtype_phrase(params, FP16)}) with "
                f"{eps_text}, which is 0 in float16 (smallest subnormal 6e-8): a zero second moment gives 0/0 = NaN "
                f"weights. Keep float32 master weights (autocast), or raise eps (e.g. 1e-4) as a stopgap",
                confidence=confidence,
            )


    def _confidence(self, params, optimizer) -> Confidence:
        if params.certain:
            return Confidence.HIGH
        if trains_only_requires_grad(self.ctx, optimizer.node):
            # mixed dtypes and only the trainable parameters: most likely a frozen float16 base
            # under float32 adapters, whose float16 weights this optimizer never updates
            return Confidence.LOW
        return Confidence.MEDIUM


def _eps_value(ctx, node: cst.BaseExpression) -> tuple[float | None, str | None]:
    """An optimizer's eps as a number: a literal, a constant of the file, or the argparse default
    of the flag it reads (``eps=args.adam_epsilon`` with ``add_argument("--adam_epsilon",
    default=1e-08)``: the value of the runs that do not pass it), with that flag's name."""
    found = number(ctx, node)
    if found is not None:
        return found.value, None
    if isinstance(node, cst.Attribute):
        default = argparse_default(ctx, node.attr.value)
        found = number(ctx, default) if default is not None else None
        if found is not None:
            return found.value, f"--{node.attr.value}"
    return None, None


def _wrapped(target: str | None) -> str | None:
    """``model.module`` is ``model``'s own module when ``model`` is a DistributedDataParallel /
    DataParallel / accelerate wrapper (their ``module`` attribute): one set of parameters."""
    return target[: -len(".module")] if target is not None and target.endswith(".module") else target


def _fp16_aware_eps(ctx, optimizer) -> bool:
    """An Adam-family optimizer whose eps was raised for float16: at least its smallest normal
    number (``eps=1e-4``), where float32 recipes stay at 1e-8..1e-6."""
    if not ADAM.search(optimizer.qualified.rsplit(".", 1)[-1]) or optimizer.eps is None:
        return False
    eps, _ = _eps_value(ctx, optimizer.eps)
    return eps is not None and eps >= FP16_SMALLEST_NORMAL


def _flag(call: cst.Call, helper) -> cst.BaseExpression | None:
    from dtype_lint.facts.passed_models import _argument

    return _argument(call, helper.flag, helper.flag_position) if helper.flag_position is not None else None


def _layer_of(param: cst.BaseExpression) -> cst.BaseExpression | None:
    """``layer.lora_up`` for ``layer.lora_up.weight``: the one layer a parameter expression names."""
    if isinstance(param, cst.Attribute) and param.attr.value in ("weight", "bias"):
        return param.value
    return None


def _in_call(ctx, node: cst.CSTNode, name: str) -> bool:
    """``node`` is an argument of a call of ``name`` (``parser.add_argument(..., default=1e-8)``)."""
    parent = ctx.parent(node)
    call = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
    return isinstance(call, cst.Call) and call_name(call) == name


# -- DTL405 -----------------------------------------------------------------------------------
class EvalDtypeFlip(Rule):
    """## What it does
    Flags a whole-model cast (`model.float()`, `model.half()`) inside an evaluation function
    (named like `evaluate`/`validate`/`test`/`predict`/`generate`, or decorated with
    `torch.no_grad()`/`torch.inference_mode()`) that is not undone before the function returns,
    in a file that trains that model. Also a function of any name that casts a module it receives
    to float16/bfloat16 (in place: `Module.half()` and `.to(dtype)` change the caller's module) when
    a training loop of the file passes it the model it trains and goes on training (medium). In a
    project check the helper may be in another file, a function or a method of an instance the
    caller holds (`self.evaluator.evaluate(self.model, half=self.args.fp16)` with
    `if half: model = model.half()` in evaluator.py): the finding is then in the caller's file, at
    the training step that goes on with the cast model, and names the helper's cast; a second one
    is in the helper's file, at the cast the fix changes. The helper's condition may be a flag it
    takes or a precision switch of its own (`half = device.type != 'cpu'`); the model passed may be
    the trained one or a weight average the loop updates in place each step (`ema.update(model)`
    ... `validate(model=ema.ema)`: the average then accumulates in float16). A helper's flag passed
    as a literal `False` (or left out), a switch set to `False`, a copy passed (`deepcopy(model)`),
    a parameter rebound before the cast (`model = torch.load(...)`) or a helper that casts the
    model back after the cast stays silent; the other arm of the same choice
    (`model.half() if half else model.float()`) is not a cast back.

    ## Why is this bad?
    Evaluation should not change the model the training loop continues with. After
    `validate()` leaves the model in float32, the next training step feeds it float16 inputs
    (`mat1 and mat2 must have the same dtype`) or steps an optimizer whose state is float16
    (`expected dtype c10::Half for `end` but got dtype float`). A cast that is restored
    (`model.float()` ... `model.half()`) is exact and not flagged; autocast in the evaluation
    function is the simpler tool.

    ## Example
    ```python
    @torch.no_grad()
    def validate(model, loader):
        model.float()
        return sum(criterion(model(x), y) for x, y in loader)
    ```

    ## Use instead
    ```python
    @torch.no_grad()
    def validate(model, loader):
        with torch.autocast("cuda", enabled=False):
            return sum(criterion(model(x.float()), y) for x, y in loader)
    ```

    ## Fix safety
    No fix.
    """

    code = "DTL405"
    name = "eval-dtype-flip"
    summary = "Evaluation casts the model and does not cast it back"
    queries = (
        "the dtype flow: each model's casts and the optimizers that train it (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "which helper a training loop passes the model it trains, in this file or, in a project check, in another (facts/passed_models.py; project/helpers.py)",
    )
    # The cast is in a function named like EVAL_FUNCTION (matched ignoring case: the usual three
    # spellings of each word) or decorated with no_grad/inference_mode, its model is trained by an
    # optimizer, and the cast changes its dtype (two float dtypes, one not float32).
    triggers = (
        "val", "Val", "VAL", "test", "Test", "TEST", "predict", "Predict", "PREDICT", "infer", "Infer", "INFER",
        "generate", "Generate", "GENERATE", "sampl", "Sampl", "SAMPL", "no_grad", "inference_mode",
    ) + LOWP_TRIGGERS  # a helper of any name that halves the model a caller trains (see _check_passed_models)
    required_triggers = (OPTIMIZER_TRIGGERS,) + NOT_FP32_TRIGGERS
    valid = (
        "import torch\nmodel = Net().half()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n@torch.no_grad()\n"
        "def validate():\n    model.float()\n    run(model)\n    model.half()\n",
        "import torch\nmodel = Net().half()\ndef evaluate():\n    model.float()\n    run(model)\n",
        "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\ndef evaluate():\n    model.float()\n",
    )
    invalid = (
        Invalid(
            "import torch\nmodel = Net().half()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n@torch.no_grad()\n"
            "def validate():\n    model.float()\n    return run(model)\n"
        ),
        Invalid(
            "import torch\nclass Trainer:\n    def __init__(self, model):\n        self.model = model.half()\n"
            "        self.opt = torch.optim.AdamW(self.model.parameters(), eps=1e-4)\n"
            "    def evaluate(self, batch):\n        self.model.float()\n        return self.model(batch)\n"
        ),
        Invalid(
            "import torch\ndef log_images(net, z):\n    net.half()\n    return net(z.half())\n"
            "def train(model, loader, z):\n    opt = torch.optim.Adam(model.parameters())\n    for x in loader:\n"
            "        model(x).mean().backward()\n        opt.step()\n        log_images(model, z)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        flow = self.ctx.flow
        trained = {optimizer.target for optimizer in flow.optimizers if optimizer.target}
        self._check_passed_models(trained)
        self._check_project_helpers(trained)
        if not trained:
            return
        for cast in flow.module_casts:
            if not cast.dtypes or not _is_eval_function(cast.function):
                continue
            if cast.target not in trained and cast.target.split(".")[0] not in trained:
                continue
            before = cast.before
            if before is not None and before.certain and before.dtypes == cast.dtypes:
                continue  # a no-op
            if self._restored(cast):
                continue
            if before is None or not before.known or before.dtypes <= cast.dtypes:
                continue  # unknown stays silent
            confidence = Confidence.MEDIUM
            was = f"{dtype_phrase(before)}"
            self.report(
                cast.node,
                f"`{cast.function.name.value}` casts `{cast.target}` to {_dtypes(cast.dtypes)} and never casts it back, "
                f"but `{cast.target}` is {was} and trained by an optimizer in this file: the next training step "
                f"runs with the wrong dtype. Restore the dtype before returning, or use autocast for evaluation",
                confidence=confidence,
            )

    def _check_project_helpers(self, trained: set[str]) -> None:
        """A helper of another file (project/helpers.py) that casts the model it is given in place,
        called from a training loop here with the model it trains: reported at the loop's training
        step, which goes on with the cast model."""
        from dtype_lint.facts.passed_models import PassedModels, averaged_each_step, project_helper_calls

        helpers = getattr(getattr(self.ctx, "worlds", None), "helpers", None)
        if not helpers:
            return
        base = posixpath.dirname(self.ctx.path)
        passed = PassedModels(self.ctx)
        for call, helper, model, step, dtypes in project_helper_calls(passed, helpers, trained):
            after = (f"the next steps run a {_dtypes(dtypes)} model with float32 optimizer state and inputs")
            if model not in trained and model.split(".")[0] not in trained and averaged_each_step(
                    passed, model.split(".")[0], trained):
                after = (f"the next steps average the trained weights into a {_dtypes(dtypes)} copy, losing"
                         f" the small updates, and that copy is the one evaluated and saved")
            when = ""
            if helper.flag:
                flag = _flag(call, helper)
                given = f"passes `{self.ctx.code_for(flag)}`" if flag is not None else "leaves it at its default `True`"
                when = f" when `{helper.flag}` is true (line {_line(self.ctx, call)} {given})"
            self.report(
                step,
                f"training goes on here with `{model}`, but line {_line(self.ctx, call)} hands it to"
                f" {helper.describe(base)}, which casts it to {_dtypes(dtypes)} in place{when} and never casts it"
                f" back: {after}."
                f" Evaluate a copy (`copy.deepcopy({model})`), or use autocast",
                confidence=Confidence.MEDIUM,
            )

    def _check_passed_models(self, trained: set[str]) -> None:
        """A function of any name that casts a module it receives to float16/bfloat16 in place
        (``Module.half()`` and ``.to(dtype)`` mutate the caller's module) and never casts it back,
        called by a training loop of this file with the very model it trains (not a copy)."""
        from dtype_lint.facts.passed_models import PassedModels, averaged_each_step, callers_passing_trained_model

        passed = None
        for cast in self.ctx.flow.module_casts:
            if not cast.dtypes or not cast.dtypes <= LOW or cast.function is None or self._restored(cast):
                continue
            passed = passed or PassedModels(self.ctx)
            found = callers_passing_trained_model(passed, cast, trained)
            if found is None:
                continue
            call, model = found
            after = "the next steps run a half model with float32 optimizer state and inputs"
            if model not in trained and model.split(".")[0] not in trained and averaged_each_step(
                    passed, model.split(".")[0], trained):
                after = "the next steps average the trained weights into a half copy, losing the small updates"
            self.report(
                cast.node,
                f"`{cast.function.name.value}` casts the `{cast.target.split('.')[0]}` it is given to {_dtypes(cast.dtypes)} in"
                f" place and never casts it back, and line {_line(self.ctx, call)} passes it `{model}`, the model"
                f" training goes on with: {after}."
                f" Evaluate a copy (`copy.deepcopy({model})`), or use autocast",
                confidence=Confidence.MEDIUM,
            )

    def _restored(self, cast: Cast) -> bool:
        """Another cast of the same model in the same function undoes this one, or this one undoes it."""
        for other in self.ctx.flow.casts_of(cast.target):
            if other is cast or other.function is not cast.function or other.dtypes == cast.dtypes:
                continue
            if _other_arm(self.ctx, cast.node, other.node):
                continue  # ``model.half() if half else model.float()``: one configuration or the other, no undoing
            return True
        return False


def _other_arm(ctx, one: cst.CSTNode, other: cst.CSTNode) -> bool:
    """``one`` and ``other`` sit in the two arms of the same ``if``/``elif``/ternary."""
    above_other = set()
    node = other
    while node is not None:
        above_other.add(id(node))
        node = ctx.parent(node)
    child, node = one, ctx.parent(one)
    while node is not None:
        if isinstance(node, (cst.If, cst.IfExp)):
            arms = (node.body, node.orelse)
            if child is arms[0] and arms[1] is not None and id(arms[1]) in above_other:
                return True
            if child is arms[1] and id(arms[0]) in above_other:
                return True
        child, node = node, ctx.parent(node)
    return False

"""DTL101 in the other direction: DTL108 fp32-model-lowp-input (a float32 model fed a float16 or
bfloat16 tensor outside autocast)."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts import contract_inputs, inplace_upcast, own_dtype_components
from dtype_lint.facts.branch_conditions import branches, exclusive, runs_whenever
from dtype_lint.facts.dtypes import BF16, FP16, FP32, LONG_NAMES, LOW, Cast, Origin, Value
from dtype_lint.facts.flow.values import DTYPE
from dtype_lint.facts.flow.library import LOWP_TRIGGERS
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import training_facts
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.model_input import (
    LowpModelFp32Input,
    _in_module_class,
    _root_name,
    arguments,
    autoencoder_call,
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
# Methods that run a model's first layer on their argument as ``forward`` does (an autoencoder's
# ``vae.encode(pixels)`` / ``vae.decode(latents)`` go straight into a conv).
FORWARD_LIKE = frozenset({"encode", "decode"})
# Keyword inputs that reach a model's first layer (``text_encoder(inputs_embeds=embeds)``).
INPUT_KEYWORDS = frozenset({"input", "x", "inputs_embeds", "pixel_values", "sample", "latents", "hidden_states"})


def _drops_fp32_wrapper(call: cst.Call) -> bool:
    """``accelerator.unwrap_model(model, keep_fp32_wrapper=False)`` (or ``False`` second): the
    module comes back without the autocast forward ``prepare`` gave it (accelerate's contract)."""
    keep = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "keep_fp32_wrapper"), None)
    if keep is None:
        plain = [a.value for a in call.args if a.keyword is None and not a.star]
        keep = plain[1] if len(plain) > 1 else None
    return isinstance(keep, cst.Name) and keep.value == "False"


class Fp32ModelLowpInput(Rule):
    """## What it does
    Flags a call of a float32 model (a `torch.nn` layer, a module class of this file, or a
    diffusers autoencoder's `encode`/`decode`, which run their layers on the input as given; float32
    on every path: never cast, or cast back with `.float()`) on a tensor that is float16 or
    bfloat16 on every path, outside autocast: `model.float()` followed by `img.half()`. A model
    that went through `accelerator.prepare`, `unwrap_model`, `deepspeed.initialize` or a
    Lightning `setup` is skipped: those wrap its forward in autocast; not so
    `accelerator.unwrap_model(model, keep_fp32_wrapper=False)`, which hands back the bare
    module (accelerate's contract; the default, True since accelerate 0.16, keeps the
    wrapper). Inside a module's
    `forward`, `self.head(x)` is reported when `x` is the output of a submodule cast apart from
    the rest (`self.wte.to(torch.bfloat16)` in an `init_weights()` the program calls, or
    `model.encoder.half()` in another file) and `self.head` is float32; a model one of whose
    parts was cast is not judged at its own call (the input may be meant for that part).

    A model cast to float32 explicitly on one path (`vae.to(device, dtype=torch.float32)`,
    `.float()`, often only in one branch of an `if`) and called (`vae(x)`, `vae.encode(x)`,
    `vae.decode(z)`, `text_encoder(inputs_embeds=e)`) on a tensor that is float16/bfloat16 in a
    reachable configuration (`x.to(dtype=weight_dtype)` where `weight_dtype` is set from
    `accelerator.mixed_precision` or a flag) is reported at medium confidence, naming the float32
    cast and the input's cast. It stays silent when the input is cast to the model's own dtype
    (`x.to(vae.dtype)`), under an enabled autocast region, when a later cast of the model runs
    on every path to the call, or when the float32 cast and the input's low dtype sit in
    exclusive branches (the two sides of one `if`, or contradicting tests).

    The in-place upcast contract (`facts/inplace_upcast.py`): a module kept by the object or
    given as a parameter (`self.vae`), upcast to float32 in place (`self.upcast_vae()`, diffusers'
    pipelines' method; `self.vae.to(dtype=torch.float32)`; `.float()`) under a test of its own
    float16 dtype (`if self.vae.dtype == torch.float16 and ...`, also through a name), with the
    input cast to its dtype only inside that branch and never cast back in the function, is
    reported at each later `self.vae.decode(x)` / `encode(x)` of that input (medium): the upcast
    outlives the call, so the next call skips the branch and gives the float16 input to the
    float32 VAE (huggingface/diffusers d4b2bfc, 0ea5162). A cast back in another method of the
    class keeps it silent, unless that cast back runs only under a test that the module is
    float16 read there (`needs_upcasting = self.vae.dtype == torch.float16 ...; if
    needs_upcasting: self.vae.to(dtype=torch.float16)`) with no method of the class run between
    the test and the cast back: read after the upcast, that test is false.

    A library object's component whose dtype is its own (facts/own_dtype_components.py): a
    diffusers pipeline's VAE, which users keep in float32 while the pipeline runs
    float16/bfloat16 (or leave in the pipeline's dtype). Where the file itself shows that (an
    input cast to `self.vae.dtype`, an upcast of the VAE, `force_upcast`, a documented example
    loading the VAE in float32), a tensor the method casts to another dtype on every path (a
    dtype constant, `prompt_embeds.dtype`, `self.transformer.dtype`, a `dtype` parameter every
    caller in the class gives one of those) and then hands to `self.vae.encode`/`decode` is
    reported at the cast (medium): one of the two setups feeds the VAE another dtype
    (huggingface/diffusers e7f3a73). A cast to `self.vae.dtype` (or to `dtype or
    self.vae.dtype`), a parameter some caller gives the VAE's dtype, and an input the method
    did not cast stay silent.

    A library class's method given a low-precision input by the library's contract
    (facts/contract_inputs.py, catalog in facts/lowp_contract.py): a subclass of bitsandbytes'
    `Linear8bitLt` runs in a model loaded with `load_in_8bit=True`, which transformers loads in
    float16, so its `forward(x)` gets float16 activations. Handing `x` (through a dropout) to a
    float32 `torch.nn` layer the class built without `dtype=` (a LoRA adapter's `nn.Linear`),
    outside autocast and outside a branch where `torch.is_autocast_enabled()` holds, is reported
    at medium confidence (huggingface/peft a353716).

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

    The diffusers training-script form (diffusers#4619):
    ```python
    weight_dtype = torch.float16 if accelerator.mixed_precision == "fp16" else torch.float32
    vae.to(accelerator.device, dtype=torch.float32)
    pixel_values = batch["pixel_values"].to(dtype=weight_dtype)
    latents = vae.encode(pixel_values).latent_dist.sample()
    ```

    ## Use instead
    ```python
    pred = model(img.float())   # or cast both, or run under torch.autocast
    pixel_values = batch["pixel_values"].to(dtype=vae.dtype)
    ```

    ## Fix safety
    Unsafe: it appends `.float()` to the input, which changes its dtype for everything the
    model returns. High confidence when both dtypes are certain and the model is a torch layer
    or a class of this file, medium otherwise.
    """

    code = "DTL108"
    name = "fp32-model-lowp-input"
    summary = "float32 model called on a float16/bfloat16 tensor outside autocast"
    queries = (
        "the dtype flow: the called model's dtype on every path and its casts, and the dtype of the input tensor (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the enabled autocast region around a node, as the dtype flow records it (facts/dtypes.py `autocast_at`)",
        "whether two casts or calls can run in one configuration (facts/branch_conditions.py)",
        "a module upcast in place under a test of its own dtype (facts/inplace_upcast.py)",
        "a library component whose dtype is its own, given a tensor cast to another dtype (facts/own_dtype_components.py, catalog in facts/lowp_contract.py)",
        "a library class's method handing the low-precision input its contract gives it to a float32 layer it built (facts/contract_inputs.py, catalog in facts/lowp_contract.py)",
        "the file's assignments, to find a model that went through a wrapper that autocasts its forward (`accelerator.prepare`, `deepspeed.initialize`; facts/training.py)",
    )
    fix_safety = Safety.UNSAFE
    # a diffusers pipeline runs in its low torch_dtype without spelling it (facts/own_dtype_components.py),
    # a bitsandbytes 8-bit layer in float16 (facts/contract_inputs.py)
    triggers = LOWP_TRIGGERS + ("DiffusionPipeline", "Linear8bitLt")
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
        if self._configured(node):
            return
        module, module_node = callee_module(self.ctx, node)
        if module is None or not module.only(FP32) or is_loss_module(module) or module.role == "quantized":
            return
        if not (LowpModelFp32Input._own_or_torch(module) or autoencoder_call(self.ctx, module, node)) or module.parts:
            return  # a model with a low part (``model.vision.half()``) may take low inputs
        inside = _root_name(module_node) == "self"  # reported at the caller, unless a part meets the rest here
        if self.ctx.flow.autocast_at(node) is not None or forward_casts_inputs(self.ctx, module):
            return
        if module.autocast:
            return  # its forward runs under a framework's autocast (``accelerator.prepare``)
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

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # A module upcast in place only when its dtype tests float16, its input cast only there:
        # the upcast outlives the call, so the next call skips the branch (facts/inplace_upcast.py).
        for found in inplace_upcast.upcasts_in(self.ctx, node):
            argument = found.call.args[0].value
            self.report(
                argument,
                f"`{found.module}` is upcast to float32 in place (line {self.ctx.position(found.upcast).start.line},"
                f" `{code(self.ctx, found.upcast)}`) only when its dtype is float16, and `{found.input_name}` is cast"
                f" to its dtype only in that branch: the upcast outlives this call, so the next call skips the"
                f" branch and `{code(self.ctx, found.call.func)}` gets the float16 `{found.input_name}` (Input type"
                " (c10::Half) and bias type (float) should be the same); cast the input to"
                f" `{found.module}.dtype` on every path, or cast the module back after the call",
                confidence=Confidence.MEDIUM,
            )
        # A contract's low-precision input (a bitsandbytes 8-bit layer's activations) given to a
        # float32 layer the class built (facts/contract_inputs.py).
        for found in contract_inputs.inputs_in(self.ctx, node):
            layer = code(self.ctx, found.layer)
            given = code(self.ctx, found.argument)
            via = "" if given == found.parameter else f" (through `{given}`)"
            self.report(
                found.argument,
                f"`{layer}` is a float32 layer this class builds, and it is given `{found.parameter}`{via},"
                f" which is float16 {found.condition}; no autocast region is active: the call fails with a"
                f" dtype mismatch (expected scalar type Float but found Half); cast the input to the layer's dtype"
                f" (`.to({layer}.weight.dtype)`) and the result back, or run it under autocast",
                confidence=Confidence.MEDIUM,
            )
        # A component whose dtype is its own (a pipeline's VAE) given a tensor the method cast to
        # another dtype (facts/own_dtype_components.py).
        reported: set[int] = set()
        for found in own_dtype_components.inputs_in(self.ctx, node):
            # at the cast when it is there for the VAE (one report for the calls it feeds), else at the input
            at = found.cast if found.feeds_only else found.argument
            if id(at) not in reported:
                reported.add(id(at))
                self._report_own_dtype(found, at)

    def _report_own_dtype(self, found, at: cst.CSTNode) -> None:
        line = self.ctx.position
        dtype = own_dtype_components.cast_dtype(found.cast) or found.cast
        via = f" (every caller gives `{found.dtype_text}`, e.g. line {line(found.via).start.line})" if found.via is not None else ""
        evidence = "" if found.evidence is None else (
            f" (this file reads `{found.component}`'s own dtype at line {line(found.evidence).start.line},"
            f" `{code(self.ctx, found.evidence)}`)")
        self.report(
            dtype if found.feeds_only else at,
            f"`{found.name}` is cast at line {line(found.cast).start.line} to `{code(self.ctx, dtype)}`{via} and then given to"
            f" `{code(self.ctx, found.call.func)}` (line {line(found.call).start.line}), whose dtype is its own:"
            f" {found.why}{evidence}, so a float32 VAE, or one in the pipeline's dtype, gets another"
            " dtype (Input type (c10::Half) and bias type (float) should be the same); cast the input to"
            f" `{found.component}.dtype`",
            confidence=Confidence.MEDIUM,
        )

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
                    wrapper = (dotted_name(value.func) or "").rsplit(".", 1)[-1]
                    if wrapper == "unwrap_model" and _drops_fp32_wrapper(value):
                        continue  # the bare module: accelerate took its autocast wrapper off
                    if wrapper in WRAPPERS:
                        return True
                    if value.args:
                        sources.append(dotted_name(value.args[0].value))
            names = sources
        return False

    # -- a float32 cast on one path, a low input in a reachable configuration -------------------
    def _configured(self, node: cst.Call) -> bool:
        """Report (and return True) a model cast to float32 explicitly on a path that reaches
        ``node``, called on an input low in a configuration that path can run in."""
        module, module_node = callee_module(self.ctx, node)
        forward_like = False
        if module is None and isinstance(node.func, cst.Attribute) and node.func.attr.value in FORWARD_LIKE:
            module_node = node.func.value
            module, forward_like = self.ctx.flow.value_of(module_node), True
        if module is None or module.kind != "module" or FP32 not in module.dtypes:
            return False
        if is_loss_module(module) or module.role == "quantized" or module.parts:
            return False
        if not (forward_like or LowpModelFp32Input._own_or_torch(module) or autoencoder_call(self.ctx, module, node)):
            return False  # a Hugging Face model may cast its inputs itself
        if _root_name(module_node) == "self" and _in_module_class(self.ctx, node):
            return False  # ``self``'s dtype is the caller's world
        if self.ctx.flow.autocast_at(node) is not None or forward_casts_inputs(self.ctx, module) or self._wrapped(module_node):
            return False
        target = dotted_name(module_node)
        casts = self.ctx.flow.casts_of(target) if target else []
        fp32_casts = [cast for cast in casts if cast.dtypes == frozenset({FP32}) and self._reaches(cast, casts, node, module)]
        if not fp32_casts:
            return False
        for arg in arguments(node):
            if arg.star or arg.keyword is not None and arg.keyword.value not in INPUT_KEYWORDS:
                continue
            value = self.ctx.flow.value_of(arg.value)
            if value is None or value.kind != "tensor" or value.autocast is not None or not value.dtypes & LOW:
                continue
            if module.only(FP32) and (value.only(FP16) or value.only(BF16)):
                continue  # certain on both sides: the plain check's
            low = FP16 if FP16 in value.dtypes else BF16
            source = value.origin_of(low)
            if source is None or self._follows_model(source.node, target):
                continue
            world = self._world(source.node, low)
            cast = next((c for c in fp32_casts if not exclusive(self.ctx, c.node, source.node)
                         and (world is None or not exclusive(self.ctx, c.node, world.node))), None)
            if cast is None:
                continue
            self._report_configured(node, module_node, arg.value, value, low, cast, source, world)
            return True
        return False

    def _reaches(self, cast: Cast, casts: list[Cast], call: cst.Call, module: Value) -> bool:
        """The explicit float32 ``cast`` can be the module's dtype at ``call``: the flow's
        float32 comes from it, or it is written before the call in the call's function and no
        other cast of the model after it runs on every path to the call."""
        origin = module.origin_of(FP32)
        if origin is not None and origin.node is cast.node:
            return True
        function = self.ctx.enclosing(call, cst.FunctionDef)
        if cast.function is not function:
            return False
        order = self.ctx.source_order
        if order(cast.node)[1] >= order(call)[0]:
            return False
        return not any(
            other is not cast and order(cast.node)[1] < order(other.node)[0] and order(other.node)[1] < order(call)[0]
            and other.function is function and runs_whenever(self.ctx, other.node, call)
            for other in casts
        )

    def _follows_model(self, cast: cst.CSTNode, target: str | None) -> bool:
        """The input was cast to the model's own dtype: ``x.to(vae.dtype)``,
        ``x.to(dtype=next(vae.parameters()).dtype)``."""
        if not isinstance(cast, cst.Call) or target is None:
            return False
        spelled = re.compile(rf"(?<![\w.]){re.escape(target)}\s*\.\s*(dtype|parameters)\b")
        return any(spelled.search(self.ctx.code_for(arg.value)) for arg in cast.args)

    def _world(self, cast: cst.CSTNode, low: str) -> Origin | None:
        """Where the low dtype of the input's cast was chosen: the ``torch.float16`` assigned to
        ``weight_dtype`` under ``if accelerator.mixed_precision == "fp16":``, or None. An Origin,
        not a node: under a calling context it may lie in another file (its line is its own)."""
        if not isinstance(cast, cst.Call):
            return None
        for arg in cast.args:
            value = self.ctx.flow.value_of(arg.value)
            if value is not None and value.kind == DTYPE and low in value.dtypes:
                return value.origin_of(low)
        return None

    def _condition(self, node: cst.CSTNode) -> str:
        """`` when `test` is true`` for the innermost ``if`` around ``node``, else ``""``."""
        found = branches(self.ctx, node)
        if not found:
            return ""
        branch = found[0]
        return f" when `{branch.test}` is {'true' if branch.holds else 'false'}"

    def _report_configured(self, node, module_node, arg, value, low, cast, source, world) -> None:
        line = self.ctx.position(cast.node).start.line
        chosen = ""
        if world is not None:
            chosen = f"{self._condition(world.node)} (line {world.line})"
        message = (
            f"`{code(self.ctx, module_node)}` is float32{self._condition(cast.node)} (line {line}, "
            f"`{code(self.ctx, cast.node)}`), but `{code(self.ctx, arg)}` is {LONG_NAMES[low]}{chosen} "
            f"(cast at line {source.line}, `{source.text}`) and no autocast region is active: the call fails "
            "with a dtype mismatch (Input type (c10::Half) and bias type (float) should be the same); "
            f"cast the input to the model's dtype (`.to({code(self.ctx, module_node)}.dtype)`) or use autocast"
        )
        fix = Fix(Safety.UNSAFE, (suffix_edit(self, arg, ".float()"),), "cast the input to float32")
        self.report(arg, message, confidence=Confidence.MEDIUM, fix=fix)

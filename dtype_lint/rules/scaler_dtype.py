"""DTL3xx rules about what a GradScaler scales: bf16 (needs no scaler), fp16 parameters (cannot
be unscaled), gradient accumulation (one scale per effective batch), fp32 (nothing to scale)."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts import adapters, branch_conditions, config_values, flag_logic, launch_scripts, precision_sources
from dtype_lint.facts.amp import autocast_signature, dtype_literal, is_grad_scaler, literal_bool
from dtype_lint.facts.flow.library import FP16_TRIGGERS, LOWP_TRIGGERS
from dtype_lint.facts.devices import chain_root
from dtype_lint.facts.lowp_spelled import code_words
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.scaler import Kind
from dtype_lint.facts.training import (
    call_name,
    calls_in,
    is_true,
    keyword,
    positional,
    string_value,
    training_facts,
    trains_only_requires_grad,
    walk,
)
from dtype_lint.findings import Confidence, Edit, Fix, Safety
from dtype_lint.facts.flow.seeding import WorldOrigin
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule


def _line(ctx, node: cst.CSTNode) -> int:
    return ctx.position(node).start.line


def scaler_enabled(ctx, call: cst.Call) -> tuple[bool | None, cst.BaseExpression | None]:
    """A GradScaler construction's literal ``enabled`` (True when omitted; None at run time)."""
    node = keyword(call, "enabled")
    if node is None:
        # torch.amp.GradScaler(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled);
        # torch.cuda.amp.GradScaler has no device argument.
        position = 5 if ctx.names.matches(call.func, "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler") else 4
        node = positional(call, position)
    if node is None:
        return True, None
    literal = literal_bool(node)
    if literal is None:
        # ``enabled=conf["train"]["use_amp"]``: on in every configuration the config files give
        settings = config_values.settings_of(ctx, node)
        if settings and all(s.value is True for s in settings):
            return True, node
    return literal, node


def _scaler_phrase(ctx, scaler: cst.Call) -> str:
    if is_grad_scaler(ctx.names, scaler):
        return "GradScaler"
    return f"`{ctx.code_for(scaler.func)}` (a wrapper around GradScaler)"


# Calls that hand a model to a framework, by the framework whose precision source drives them.
# Calls that load or cast a module to a dtype (the place a float16 trained model is made).
FP16_CASTS = frozenset({"from_pretrained", "to", "half", "type"})
# A precision source set on the command line: "`--fp16` on the command line" (facts/precision_sources.py).
COMMAND_LINE_FLAG = re.compile(r"`--([A-Za-z0-9_-]+)` on the command line")
# Frameworks whose fp16 mode makes a GradScaler that unscales the gradients of what they train.
SCALING_FRAMEWORKS = frozenset({"transformers", "accelerate", "lightning"})
TRAINS_MODEL = {"Trainer": "transformers", "Seq2SeqTrainer": "transformers", "SFTTrainer": "transformers",
                "prepare": "accelerate", "prepare_model": "accelerate", "fit": "lightning"}


def _bound_names(target: cst.BaseExpression) -> set[str]:
    """``args`` for ``args``, ``(model_args, args)`` and ``[args]`` targets."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {e.value.value for e in target.elements if isinstance(e.value, cst.Name)}
    return set()


class ScalerWithBf16(Rule):
    """## What it does
    Flags an enabled `GradScaler` (or a wrapper that owns one, such as timm's `NativeScaler`) in a
    file whose autocast runs in bfloat16 (a literal
    `dtype=torch.bfloat16`, or a config-driven dtype that may be bf16 while the scaler stays on),
    or whose optimizer steps bfloat16 parameters. A framework that makes its own scaler counts too:
    a bfloat16 model handed to a `Trainer` with `TrainingArguments(fp16=True)`, to
    `accelerator.prepare()` with `Accelerator(mixed_precision="fp16")`, or to Lightning's
    `Trainer(precision="16-mixed").fit()` (the precision sources of `facts/precision_sources.py`),
    reported at the setting that makes the scaler when the file writes or chooses it (`fp16=True`,
    the line a fix changes), else at the model's bf16 cast; so does a hand-made scaler in a file whose framework autocasts to bf16 (`mixed_precision="bf16"`,
    `precision="bf16-mixed"`), and one whose optimizer steps a model one part of which is built in
    bfloat16 (`nn.ModuleList([nn.Linear(d, d, dtype=torch.bfloat16) ...])`, in any file: reported
    at that layer when it is made in this file, else at the scaler).
    A config-driven dtype with a scaler built only under a condition (often the same flag that
    picks float16) is low confidence: the rule does not relate the two conditions. It does relate
    a scaler's `enabled=` to the test that picks bfloat16 when both are written as expressions of
    the same flags: `enabled=use_amp` with `use_amp = args.fp16 or args.bf16` and an autocast
    `dtype=torch.bfloat16 if args.bf16 else torch.float16` is on in the bf16 runs (medium), while
    `enabled=(amp_dtype == torch.float16)` or `enabled=not args.bf16` is not. Whatever the
    autocast dtype, a scaler whose scaled loss (in its own function) is computed by a module the
    dtype flow knows is bfloat16 is flagged too (`model = model.to(getattr(torch,
    cfg.backbone_dtype))` with `backbone_dtype="bfloat16"` in a config object, h2o-llmstudio#628):
    bf16 parameters have bf16 gradients. `enabled=` read from a config setting that is true in
    every config file counts as enabled. A bfloat16 model under `--fp16` on the command line
    (`HfArgumentParser` over `TrainingArguments`) is low confidence when the project's shell
    scripts launch the file and none of their commands passes `--fp16` (InternVL's all pass
    `--bf16 True`; facts/launch_scripts.py): the scaler needs a user who changes those launches.

    ## Why is this bad?
    bf16 has float32's exponent range: its gradients do not underflow, so scaling them buys
    nothing (PyTorch's AMP docs, Lightning-AI/pytorch-lightning#10330). On CUDA the scaler's
    unscale kernel is not even implemented for bf16 gradients
    ("_amp_foreach_non_finite_check_and_unscale_cuda" not implemented for 'BFloat16'), and where
    it runs it skips steps on spurious infs and multiplies every loss by 65536 for nothing.

    ## Example
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x, y)
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda", enabled=False)  # or drop the scaler for bf16
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x, y)
    ```

    ## Fix safety
    Unsafe: the fix adds `enabled=<amp dtype> == torch.float16` to the scaler (`enabled=False`
    when the autocast dtype is the literal bf16), which changes the loss scale and so the
    numerics of every step. Offered only when the file has one autocast dtype expression and it
    is defined before the scaler.
    """

    code = "DTL301"
    name = "scaler-with-bf16"
    summary = "GradScaler enabled for bfloat16 training"
    queries = (
        "the GradScaler protocol of the file: its scalers and their events (facts/scaler.py)",
        "the precision a framework decides: `TrainingArguments(fp16=True)`, `Accelerator(mixed_precision=...)`, Lightning's `precision=` (facts/precision_sources.py)",
        "the values of settings read from config files and objects (facts/config_values.py) and what a flag expression is when another flag holds (facts/flag_logic.py)",
        "the dtype flow: the dtype of the parameters each optimizer steps and of the model handed to a framework, also as the project pass seeds it (facts/dtypes.py, computed by facts/flow/interpreter.py; facts/flow/seeding.py)",
        "the autocast dtypes of the file (facts/amp.py, facts/training.py)",
        "the flags the project's shell scripts pass when they launch the file (facts/launch_scripts.py)",
    )
    fix_safety = Safety.UNSAFE
    # A GradScaler construction, and a bf16 autocast region (the word "autocast") or bf16
    # parameters the flow knows of (LOWP_TRIGGERS, which hold "autocast" too).
    # (timm's NativeScaler wraps a GradScaler: see facts.amp.is_scaler_wrapper.)
    triggers = ("GradScaler", "NativeScaler", "Arguments", exact_word("Accelerator"), "precision")
    required_triggers = (LOWP_TRIGGERS,)
    valid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda', dtype=torch.float16):\n    loss = model(x)\n",
        "import torch\namp_dtype = torch.bfloat16 if bf16 else torch.float16\n"
        "scaler = torch.amp.GradScaler('cuda', enabled=amp_dtype == torch.float16)\n"
        "with torch.autocast('cuda', dtype=amp_dtype):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=False)\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n",
    )
    invalid = (
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n",
            fixed="import torch\nscaler = torch.amp.GradScaler('cuda', enabled=False)\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n",
        ),
        Invalid(
            "import torch\namp_dtype = torch.bfloat16 if args.bf16 else torch.float16\nscaler = torch.amp.GradScaler()\n"
            "with torch.autocast('cuda', dtype=amp_dtype):\n    loss = model(x)\n",
            fixed="import torch\namp_dtype = torch.bfloat16 if args.bf16 else torch.float16\n"
            "scaler = torch.amp.GradScaler(enabled=amp_dtype == torch.float16)\n"
            "with torch.autocast('cuda', dtype=amp_dtype):\n    loss = model(x)\n",
        ),
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=True)\nwith torch.autocast('cuda', torch.bfloat16):\n    loss = model(x)\n",
            fixed="import torch\nscaler = torch.amp.GradScaler('cuda', enabled=False)\nwith torch.autocast('cuda', torch.bfloat16):\n    loss = model(x)\n",
        ),
        Invalid(
            "import torch\nfrom transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainer, Seq2SeqTrainingArguments\n"
            "model = AutoModelForSeq2SeqLM.from_pretrained('t5-base', dtype=torch.bfloat16)\n"
            "args = Seq2SeqTrainingArguments('out', fp16=True)\nSeq2SeqTrainer(model=model, args=args).train()\n"
        ),
        Invalid(
            "import torch\nfrom timm.utils import NativeScaler\nloss_scaler = NativeScaler()\n"
            "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = criterion(model(x), y)\n"
            "loss_scaler(loss, optimizer)\n"
        ),
        Invalid(
            "import torch\nimport lightning as L\ntrainer = L.Trainer(precision='bf16-mixed')\n"
            "scaler = torch.amp.GradScaler('cuda')\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        facts = training_facts(self.ctx)
        self._framework_scaler(facts)
        if not facts.scalers:
            return
        regions = []  # (AutocastInfo, dtypes, source)
        for call in facts.calls:
            info = facts.autocast_of_expression(call) if self.ctx.names.matches(
                call.func, "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast"
            ) else None
            if info is None or info.enabled is False:
                continue
            dtypes, source = facts.autocast_dtypes(info)
            regions.append((info, dtypes, source))
        # A GradScaler inside a wrapper class built here is reported at the wrapper's construction.
        wrapped = {dotted_name(call.func).rsplit(".", 1)[-1] for call in facts.scalers
                   if not is_grad_scaler(self.ctx.names, call) and dotted_name(call.func)}
        for scaler in facts.scalers:
            enabled, flag = scaler_enabled(self.ctx, scaler)
            if enabled is None and flag is not None:
                self._enabled_on_bf16_runs(scaler, flag, regions)
            if enabled is not True:
                continue
            owner = self.ctx.enclosing(scaler, cst.ClassDef)
            if owner is not None and owner.name.value in wrapped and is_grad_scaler(self.ctx.names, scaler):
                continue
            # The regions this scaler serves: those of its class (``self.scaler``) or function,
            # else the file's.
            scope = self._scope(scaler)
            near = [region for region in regions if scope is not None and self._scope(region[0].node) is scope]
            self._check(facts, scaler, near or regions)

    def _enabled_on_bf16_runs(self, scaler: cst.Call, flag: cst.BaseExpression, regions) -> None:
        """``enabled=use_amp`` with ``use_amp = args.fp16 or args.bf16`` and an autocast whose
        dtype is ``torch.bfloat16 if args.bf16 else torch.float16``: on the ``--bf16`` runs the
        scaler is on and the autocast is bf16 (facts/flag_logic.py)."""
        for info, _, _ in regions:
            dtype_expr = self._autocast_dtype_argument(info.node)
            condition = flag_logic.bf16_condition(self.ctx, dtype_expr)
            if condition is None:
                continue
            test, value = condition
            if flag_logic.truth(self.ctx, flag, {test: value}) is not True:
                continue
            when = f"`{test}`" if value else f"`not {test}`"
            self.report(
                scaler,
                f"{_scaler_phrase(self.ctx, scaler)} is enabled by `{self.ctx.code_for(flag).strip()}`, which holds when"
                f" {when} does, and then the autocast at line {_line(self.ctx, info.node)} runs in bfloat16"
                f" (`{self.ctx.code_for(dtype_expr).strip()}`): bf16 gradients need no loss scaling and CUDA cannot"
                " unscale them; enable the scaler only for float16 (`enabled=(amp_dtype == torch.float16)`)",
                confidence=Confidence.MEDIUM,
            )
            return

    def _autocast_dtype_argument(self, call: cst.Call | None) -> cst.BaseExpression | None:
        if call is None:
            return None
        qualified = next(iter(self.ctx.names.qualified_names(call.func)), "")
        _, _, position, _ = autocast_signature(qualified)
        found = keyword(call, "dtype")
        return found if found is not None or position is None else positional(call, position)

    def _framework_scaler(self, facts) -> None:
        """A bf16 model trained by a framework whose fp16 mode makes its own GradScaler."""
        if not any(call_name(call) in TRAINS_MODEL for call in facts.calls):
            return
        found = precision_sources.sources_in(self.ctx.module, self.ctx.names, self.ctx)
        scaling = [f for f in found if f.effect.scaler and f.effect.autocast == "fp16" and f.framework in TRAINS_MODEL.values()]
        for call in facts.calls:
            framework = TRAINS_MODEL.get(call_name(call))
            source = self._driving_source(call, framework, scaling, found)
            if source is None:
                continue
            model = keyword(call, "model") if framework == "transformers" else positional(call, 0)
            value = self.ctx.flow.value_of(model) if model is not None else None
            if value is None or value.kind != "module" or not value.may_be("bf16") or value.role == "peft":
                continue
            # the setting that makes the scaler, where the fix changes it: chosen at run time, or
            # written in the file (``TrainingArguments(fp16=True)``); else the training call
            anchor = source.setting or source.written or call
            confidence = Confidence.HIGH if value.dtype == "bf16" and not source.effect.conditional else Confidence.MEDIUM
            launched = ""
            if source.effect.conditional and source.setting is None:
                # Set on the command line: the fix is the hard-coded bf16 cast (follow the arguments).
                origin = value.origin_of("bf16")
                if origin is not None and self._only_without_fp16_flag(origin.node):
                    continue  # bf16 only where --fp16 is off: never trained with the fp16 scaler
                anchor = origin.node if origin is not None else call
                flag = COMMAND_LINE_FLAG.match(source.description)
                found = launch_scripts.launches(self.ctx) if flag else None
                if found and not any(launch.asks(flag.group(1)) for launch in found):
                    # every launch the project ships leaves the flag off (InternVL's scripts all
                    # pass --bf16 True): the scaler needs a user who changes them
                    confidence = Confidence.LOW
                    launched = (f"; the project's {len(found)} launch command(s) of this script ({found[0].where}"
                                f"{', ...' if len(found) > 1 else ''}) never pass `--{flag.group(1)}`")
            self.report(
                anchor,
                f"`{self.ctx.code_for(model)}` is {value.describe()} {value.since('bf16')} and `{call_name(call)}`"
                f" (line {_line(self.ctx, call)}) trains it with {source.description}, which makes a GradScaler:"
                " CUDA cannot unscale bf16 gradients (\"_amp_foreach_non_finite_check_and_unscale_cuda\" not"
                f" implemented for 'BFloat16'); train bf16 with the bf16 setting, or load the model in float32{launched}",
                confidence=confidence,
            )

    def _only_without_fp16_flag(self, node: cst.CSTNode | None) -> bool:
        """``node`` (where bf16 is chosen) sits in the else of a test of the fp16 flag itself:
        QLoRA's ``torch_dtype=(torch.float32 if args.fp16 else (torch.bfloat16 if args.bf16 ...))``."""
        def names_fp16(test: cst.BaseExpression) -> bool:
            return (dotted_name(test) or "").split(".")[-1] == "fp16"

        child, current = node, self.ctx.parent(node) if node is not None else None
        while current is not None and not isinstance(current, (cst.FunctionDef, cst.Module)):
            if isinstance(current, (cst.IfExp, cst.If)):
                test = current.test
                if child is current.orelse and names_fp16(test):
                    return True  # ``... if args.fp16 else <bf16>``
                negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
                if child is current.body and negated and names_fp16(test.expression):
                    return True  # ``<bf16> if not args.fp16 else ...``
            child, current = current, self.ctx.parent(current)
        return False

    def _driving_source(self, call: cst.Call, framework, scaling, found):
        """The fp16-with-scaler source that drives ``call``: the ``args=`` of a HF Trainer or the
        receiver of Lightning's ``fit`` (the call itself or the name it was assigned to); for
        accelerate, the file's Accelerator when every one of them agrees."""
        if framework == "accelerate":
            agreeing = {f.effect for f in found if f.framework == "accelerate"}
            return next((f for f in scaling if f.framework == framework), None) if len(agreeing) == 1 else None
        driver = keyword(call, "args") if framework == "transformers" else (
            call.func.value if isinstance(call.func, cst.Attribute) else None)
        for source in scaling:
            if source.framework != framework:
                continue
            if source.node is driver:
                return source
            assign = self.ctx.parent(source.node)
            if isinstance(driver, cst.Name) and isinstance(assign, cst.Assign) and any(
                driver.value in _bound_names(t.target) for t in assign.targets
            ):
                return source
        return None

    def _built_conditionally(self, scaler: cst.Call) -> bool:
        branch = self.ctx.enclosing(scaler, cst.If, cst.IfExp)
        if branch is None:
            return False
        scope = self.ctx.enclosing(scaler, cst.FunctionDef, cst.ClassDef)
        return scope is None or self.ctx.enclosing(branch, cst.FunctionDef, cst.ClassDef) is scope

    def _scope(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.ctx.enclosing(node, cst.ClassDef) or self.ctx.enclosing(node, cst.FunctionDef)

    def _check(self, facts, scaler: cst.Call, regions) -> None:
        known = [region for region in regions if region[1]]
        if known and all("bfloat16" in dtypes for _, dtypes, _ in known):
            # A dtype from a parameter's default (``precision=torch.bfloat16``) is one reachable
            # configuration, not every run: medium at most.
            certain = all(dtypes == {"bfloat16"} and not facts.autocast_dtype_defaulted(region) for region, dtypes, _ in known)
            info, dtypes, source = known[0]
            what = "runs in bfloat16" if certain else "may run in bfloat16"
            message = (
                f"{_scaler_phrase(self.ctx, scaler)} is enabled but the autocast at line {_line(self.ctx, info.node)} {what}"
                f" ({source}): bf16 gradients need no loss scaling and CUDA cannot unscale them;"
                " enable the scaler only for float16"
            )
            if certain:
                confidence = Confidence.HIGH
            elif self._built_conditionally(scaler):
                # The condition that builds the scaler is often the flag that picks float16 over
                # bfloat16 (`if precision == "16-mixed"`): without relating the two, a heuristic.
                confidence = Confidence.LOW
            else:
                confidence = Confidence.MEDIUM
            self.report(scaler, message, confidence=confidence, fix=self._fix(facts, scaler, known))
            return
        if self._bf16_model_loss(scaler) or self._bf16_part(scaler):
            return
        if regions:
            return
        # No autocast region in sight: a framework set to bf16 autocast runs it for the scaler's loss.
        framework_bf16 = [f for f in precision_sources.sources_in(self.ctx.module, self.ctx.names, self.ctx)
                          if f.effect.autocast == "bf16" and not f.effect.conditional]
        if framework_bf16:
            source = framework_bf16[0]
            self.report(
                scaler,
                f"{_scaler_phrase(self.ctx, scaler)} is enabled but {source.description} (line {_line(self.ctx, source.node)}) trains in"
                " bfloat16 autocast: bf16 gradients need no loss scaling and CUDA cannot unscale them; drop the"
                " scaler (the framework scales fp16 losses itself)",
                confidence=Confidence.HIGH,
            )
            return
        # No autocast: the scaler serves whatever the parameters are; bf16 parameters need none.
        for optimizer in self.ctx.flow.optimizers:
            params = optimizer.params
            if params is None or not params.certain or params.dtype != "bf16":
                continue
            message = (
                f"{_scaler_phrase(self.ctx, scaler)} is enabled but `{optimizer.target}` is bfloat16 {params.since('bf16')} and its"
                f" parameters are stepped by the optimizer at line {_line(self.ctx, optimizer.node)}:"
                " bf16 gradients need no loss scaling and CUDA cannot unscale them"
            )
            self.report(scaler, message, confidence=Confidence.HIGH)
            return

    def _bf16_model_loss(self, scaler: cst.Call) -> bool:
        """Report (and say so) when the loss this scaler scales is computed, in the scaler's own
        function, by a module the flow knows is bfloat16 (``model = model.to(torch.bfloat16)``;
        ``loss = model(**batch)["loss"]``; ``scaler.scale(loss).backward()``): its parameters'
        gradients are bf16 whatever the autocast dtype."""
        assign = self.ctx.enclosing(scaler, cst.Assign)
        if assign is None or len(assign.targets) != 1:
            return False
        name = dotted_name(assign.targets[0].target)
        function = self.ctx.enclosing(scaler, cst.FunctionDef)
        facts = training_facts(self.ctx)
        for event in self.ctx.scaler.events:
            if event.kind is not Kind.SCALED_BACKWARD or event.scaler != name or event.function is not function:
                continue
            for call in calls_in(event.statement):
                if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "scale" and call.args):
                    continue
                loss = dotted_name(call.args[0].value)
                for statement, value in facts.assignments.get(loss or "", ()):
                    if self.ctx.enclosing(statement, cst.FunctionDef) is not function:
                        continue
                    for forward in calls_in(value):
                        module = self.ctx.flow.value_of(forward.func)
                        if module is None or module.kind != "module" or module.dtype != "bf16" or module.role == "peft":
                            continue
                        conditional = self._built_conditionally(scaler) or not module.certain
                        self.report(
                            scaler,
                            f"{_scaler_phrase(self.ctx, scaler)} is enabled but the loss it scales (line"
                            f" {_line(self.ctx, call)}) comes from `{self.ctx.code_for(forward.func)}`, which is bfloat16"
                            f" {module.since('bf16')}: its gradients are bf16, which need no loss scaling and CUDA cannot"
                            " unscale (\"_amp_foreach_non_finite_check_and_unscale_cuda\" not implemented for"
                            " 'BFloat16'); enable the scaler only for float16 parameters",
                            confidence=Confidence.MEDIUM if conditional else Confidence.HIGH,
                        )
                        return True
        return False

    def _bf16_part(self, scaler: cst.Call) -> bool:
        """An optimizer over a model one part of which keeps bfloat16 weights (``nn.ModuleList(
        [nn.Linear(..., dtype=torch.bfloat16)])``): its bf16 gradients reach the scaler whatever the
        autocast. Reported where the part is made (or, made in another file, at the scaler)."""
        for optimizer in self.ctx.flow.optimizers:
            params = optimizer.params
            part = next((origin for dtype, origin in params.parts if dtype == "bf16"), None) if params else None
            if part is None or params.only("bf16"):
                continue
            anchor = scaler if isinstance(part, WorldOrigin) else part.node
            self.report(
                anchor,
                f"{_scaler_phrase(self.ctx, scaler)} (line {_line(self.ctx, scaler)}) is enabled but `{optimizer.target}`"
                f" has a bfloat16 part since {part.describe()}, whose parameters the optimizer at line"
                f" {_line(self.ctx, optimizer.node)} steps: CUDA cannot unscale bf16 gradients"
                " (\"_amp_foreach_non_finite_check_and_unscale_cuda\" not implemented for 'BFloat16'); build the part"
                " in float32 and let autocast pick the compute dtype",
                confidence=Confidence.MEDIUM,
            )
            return True
        return False

    def _fix(self, facts, scaler: cst.Call, known) -> Fix | None:
        if not is_grad_scaler(self.ctx.names, scaler):
            return None  # a wrapper (timm's NativeScaler) takes no enabled= argument
        expressions = set()
        literal_only = True
        for info, _, _ in known:
            argument = keyword(info.node, "dtype")
            if argument is None:
                argument = positional(info.node, 1)
            if argument is None:
                return None
            if dtype_literal(self.ctx.names, argument) != "bfloat16":
                literal_only = False
                expressions.add(self.ctx.code_for(argument))
        if literal_only:
            value = "False"
        else:
            if len(expressions) != 1:
                return None
            expression = next(iter(expressions))
            if not self._defined_before(facts, expression, scaler):
                return None
            spelling = self.module_for_fix("torch")
            if spelling is None:
                return None
            torch_name, import_edits = spelling
            if import_edits:
                return None  # the file names torch otherwise; leave it to the author
            value = f"{expression} == {torch_name}.float16"
        existing = keyword(scaler, "enabled")
        if existing is not None:
            return Fix(Safety.UNSAFE, (self.replace(existing, value),), "enable the scaler only for float16")
        if any(arg.star for arg in scaler.args):
            return None
        end = self.ctx.position(scaler).end
        separator = ", " if scaler.args else ""
        if scaler.args and scaler.args[-1].comma is not cst.MaybeSentinel.DEFAULT:
            separator = " "
        edit = Edit(end.line, end.column, end.line, end.column, f"{separator}enabled={value}")
        return Fix(Safety.UNSAFE, (edit,), "enable the scaler only for float16")

    def _defined_before(self, facts, expression: str, scaler: cst.Call) -> bool:
        """The dtype expression can be evaluated where the scaler is built."""
        root = expression.split(".")[0]
        if not re.fullmatch(r"[A-Za-z_][\w.]*", expression):
            return False
        scaler_line = _line(self.ctx, scaler)
        bound = facts.assignments.get(expression) or facts.assignments.get(root)
        if bound:
            return all(_line(self.ctx, node) < scaler_line for node, _ in bound)
        function = self.ctx.enclosing(scaler, cst.FunctionDef)
        if function is None:
            return False
        return any(param.name.value == root for param in function.params.params)


class Fp16TrainableParams(Rule):
    """## What it does
    Flags an optimizer built over parameters that are float16 (the model was `.half()`-ed, moved
    `.to(torch.float16)` or loaded with `dtype=torch.float16`) in a file that trains with loss
    scaling (`GradScaler`, `TrainingArguments(fp16=True)`, `Accelerator(mixed_precision="fp16")`,
    Lightning's `precision="16-mixed"`, whose `trainer.fit(model)` is checked too) and attaches no
    PEFT adapters. When the loss scaling is a run-time choice (`Accelerator(mixed_precision=
    args.mixed_precision)` whose flag offers "fp16", as its argparse choices or the literals the
    file compares it with say) and the weights follow the same choice (`from_pretrained(...,
    torch_dtype=weight_dtype)` on the model being trained), the finding is medium confidence.
    The finding sits on the load or cast that makes the trained weights float16 (where the fix
    goes) when it is in the optimizer's function (for a `Trainer`, in this file), else on the
    optimizer (or the `Trainer`). When only part of the model is float16 and the optimizer is
    given only the parameters that require grad (`[p for p in m.parameters() if p.requires_grad]`,
    `filter(lambda p: p.requires_grad, ...)`), the float16 part is most likely a frozen base under
    float32 adapters: the finding is then low confidence (hidden at the default level). A model
    only one part of which is float16 (a layer built with `dtype=torch.float16`, also inside
    `nn.Sequential` / `nn.ModuleList`, in a class the model contains, in any file) is reported
    where that layer is made, or, when it is made in another file, at the `scaler.unscale_` /
    `scaler.step` call that raises.
    In a file that uses PEFT, the rule queries the adapter contract (`facts/adapters.py`):
    adapters attached in place (`unet.add_adapter(config)` of diffusers' and transformers'
    `PeftAdapterMixin`, `peft.inject_adapter_in_model(config, model)`) are made in the dtype of
    the layers they wrap, so on a model the flow knows may be float16, whose parameters an
    optimizer of the same function trains with loss scaling, they are float16: reported at the
    attaching call, unless the file upcasts trainable parameters (`cast_training_params`,
    `cast_mixed_precision_params`, or a loop reassigning `param.data`). `get_peft_model` is not
    such a call: its `PeftModel` upcasts float16 adapters to float32.

    ## Why is this bad?
    Mixed precision keeps the trainable weights in float32 and lets autocast run fp16 kernels.
    With fp16 weights the gradients are fp16 and `scaler.unscale_` refuses them ("Attempting to
    unscale FP16 gradients."); without the scaler the Adam update underflows in fp16. PEFT's
    guide puts it bluntly: trainable weights should never be fp16 (huggingface/accelerate#1778).

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    scaler = torch.amp.GradScaler("cuda")
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained(name)  # float32 master weights
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(**batch).loss
    ```

    ## Fix safety
    No fix: upcasting the model changes memory use; with adapters, `peft.cast_mixed_precision_params`
    upcasts only the trainable ones.
    """

    code = "DTL302"
    name = "fp16-trainable-params"
    summary = "float16 parameters trained with loss scaling"
    queries = (
        "the dtype flow: the dtype of the parameters each optimizer is built over, also as the project pass seeds it (facts/dtypes.py, computed by facts/flow/interpreter.py; facts/flow/seeding.py)",
        "the loss scaling the file trains with: GradScaler, or a framework's fp16 setting (facts/training.py, facts/precision_sources.py)",
        "the values of settings read from config files and objects (facts/config_values.py)",
        "PEFT adapters attached to the model (facts/adapters.py)",
        "whether the optimizer takes the low-precision parameters only on runs where the cast does not happen (facts/branch_conditions.py)",
    )
    # Loss scaling: a GradScaler, or ``*Arguments(fp16=True)`` / ``Accelerator(mixed_precision="fp16")``
    # (both spell the word "fp16"); and an fp16 value the flow knows of (FP16_TRIGGERS).
    triggers = ("GradScaler", "Arguments", exact_word("Accelerator"), "precision")
    required_triggers = (("GradScaler", exact_word("fp16"), "precision"), FP16_TRIGGERS)
    valid = (
        "import torch\nmodel = Net().cuda()\noptimizer = torch.optim.AdamW(model.parameters())\nscaler = torch.amp.GradScaler('cuda')\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4).half()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        "import torch\nfrom peft import get_peft_model\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float16)\nmodel = get_peft_model(model, config)\n"
        "optimizer = torch.optim.AdamW(model.parameters())\nscaler = torch.amp.GradScaler('cuda')\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom transformers import AutoModelForCausalLM\n"
            "model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float16)\n"
            "optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)\nscaler = torch.amp.GradScaler('cuda')\n"
        ),
        Invalid(
            "import torch\nfrom torch import nn\nnet = nn.Sequential(nn.Linear(8, 8), nn.ReLU())\nnet.half()\n"
            "opt = torch.optim.Adam(net.parameters())\nscaler = torch.amp.GradScaler()\n"
        ),
        Invalid(
            "import torch\nimport lightning as L\nmodel = torch.nn.Linear(4, 2).half()\n"
            "L.Trainer(precision='16-mixed').fit(model)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        facts = training_facts(self.ctx)
        scaling = self._loss_scaling(facts)
        conditional = False
        if scaling is None:
            scaling = self._conditional_loss_scaling()
            conditional = True
            if scaling is None:
                return
        if facts.uses_peft:
            # adapters: float32 only when made by get_peft_model or upcast (facts/adapters.py)
            self._report_half_adapters(scaling, conditional)
            return
        frozen = "requires_grad" in self.ctx.text
        for optimizer in self.ctx.flow.optimizers:
            params = optimizer.params
            if params is None or not params.may_be("fp16") or params.role == "peft":
                continue
            origin = params.origin_of("fp16")
            if branch_conditions.chosen_against(self.ctx, optimizer.node, origin.node if origin else None):
                continue  # float32 masters when the model is halved, the model's own parameters otherwise
            certain = params.certain and not frozen
            if not params.only("fp16") and trains_only_requires_grad(self.ctx, optimizer.node):
                # A mixed model whose optimizer takes only trainable parameters: the usual shape is a
                # frozen float16 base under float32 adapters (PEFT without the import), which is fine.
                confidence = Confidence.LOW
            else:
                confidence = Confidence.HIGH if certain and not conditional else Confidence.MEDIUM
            # The defect is the load or cast that makes the trained weights float16 (with loss
            # scaling on some runs only, the one that follows the same flag): report there, where
            # the fix goes, when it is in the optimizer's function; else at the optimizer.
            anchor = self._fp16_cast_of(optimizer) or optimizer.node
            part = next((origin for dtype, origin in params.parts if dtype == "fp16"), None)
            what = f"{params.describe()} {params.since('fp16')}"
            if part is not None and not params.only("fp16"):
                # one part of the model keeps float16 (``nn.PReLU(..., dtype=torch.float16)``):
                # report where it is made, or, made in another file, where the scaler unscales
                what = f"float32 with a float16 part since {part.describe()}"
                anchor = part.node if not isinstance(part, WorldOrigin) else self._unscaling_call(optimizer) or anchor
            trainer = "this optimizer" if anchor is optimizer.node else f"the optimizer at line {_line(self.ctx, optimizer.node)}"
            self.report(
                anchor,
                f"`{optimizer.target}` is {what} and {trainer} trains its"
                f" parameters with {scaling}: fp16 gradients cannot be unscaled (\"Attempting to unscale FP16"
                " gradients.\"); keep the weights float32 and let autocast run fp16",
                confidence=confidence,
            )
        if conditional:
            return
        lightning = scaling.startswith("Lightning")
        hint = '`precision="16-mixed"`' if lightning else "`fp16=True`"
        for call in facts.calls:
            if lightning and call_name(call) == "fit":
                model = positional(call, 0)  # ``trainer.fit(model)``: Lightning's scaler steps it
            elif call_name(call) in ("Trainer", "Seq2SeqTrainer") and scaling.startswith("`"):
                model = keyword(call, "model")
            else:
                continue
            value = self.ctx.flow.value_of(model) if model is not None else None
            if value is None or value.kind != "module" or not value.may_be("fp16") or value.role == "peft":
                continue
            origin = value.origin_of("fp16")
            made_here = origin is not None and not isinstance(origin, WorldOrigin) and isinstance(origin.node, cst.Call) \
                and call_name(origin.node) in FP16_CASTS
            anchor = origin.node if made_here else call  # the load or cast, where the fix goes
            self.report(
                anchor,
                f"`{self.ctx.code_for(model)}` is {value.describe()} {value.since('fp16')} and `{call_name(call)}`"
                f" (line {_line(self.ctx, call)}) trains it with {scaling}: fp16 gradients cannot be unscaled"
                f" (\"Attempting to unscale FP16 gradients.\"); load the model in float32 and let {hint} run autocast",
                confidence=Confidence.HIGH if value.certain and not frozen else Confidence.MEDIUM,
            )

    def _report_half_adapters(self, scaling: str, conditional: bool) -> None:
        """Adapters attached in place to a float16 model (``unet.add_adapter(config)``) are float16
        (peft makes them in the base layers' dtype): trained with loss scaling, unless the file
        upcasts its trainable parameters (``cast_training_params``), they cannot be unscaled."""
        if adapters.upcasts_trainable_params(self.ctx):
            return
        for attachment in adapters.attachments(self.ctx):
            value = attachment.value
            if not value.may_be("fp16"):
                continue
            origin = value.origin_of("fp16")
            optimizer = next(
                (o for o in self.ctx.flow.optimizers if o.params is not None and o.params.may_be("fp16")
                 and adapters.trains_parameters_of(self.ctx, attachment, o)),
                None,
            )
            if optimizer is None or branch_conditions.chosen_against(
                    self.ctx, optimizer.node, origin.node if origin else None):
                continue
            model = self.ctx.code_for(attachment.model)
            self.report(
                attachment.call,
                f"`{model}` is {value.describe()} {value.since('fp16')} and `{self.ctx.code_for(attachment.call.func)}`"
                f" makes its adapter weights in that dtype; the optimizer at line {_line(self.ctx, optimizer.node)}"
                f" trains them with {scaling}: fp16 gradients cannot be unscaled (\"Attempting to unscale FP16"
                f" gradients.\"); cast the trainable parameters to float32 after attaching the adapters"
                f" (diffusers' `cast_training_params({model}, dtype=torch.float32)`)",
                confidence=Confidence.HIGH if value.certain and not conditional else Confidence.MEDIUM,
            )

    def _unscaling_call(self, optimizer) -> cst.Call | None:
        """The first ``scaler.step(opt)`` / ``scaler.unscale_(opt)`` of the optimizer (where
        "Attempting to unscale FP16 gradients." is raised)."""
        assign = self.ctx.parent(optimizer.node)
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        name = dotted_name(assign.targets[0].target)
        for call in training_facts(self.ctx).calls:
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value in ("step", "unscale_") and call.args):
                continue
            receiver = self.ctx.flow.value_of(func.value)
            if receiver is not None and receiver.kind == "scaler" and dotted_name(call.args[0].value) == name:
                return call
        return None

    def _fp16_cast_of(self, optimizer) -> cst.Call | None:
        """The last call of the optimizer's function, before it, that loads or casts its target
        to a dtype that may be float16 (``unet = X.from_pretrained(..., torch_dtype=weight_dtype)``,
        ``unet.to(dtype=weight_dtype)``, ``unet.half()``)."""
        if optimizer.target is None:
            return None
        start = self.ctx.source_order(optimizer.node)[0]
        found = None
        for call in training_facts(self.ctx).calls:
            if self.ctx.source_order(call)[0] >= start or self.ctx.enclosing(call, cst.FunctionDef) is not optimizer.function:
                continue
            parent = self.ctx.parent(call)
            assigned = isinstance(parent, cst.Assign) and any(dotted_name(t.target) == optimizer.target for t in parent.targets)
            if not (assigned or chain_root(call) == optimizer.target) or call_name(call) not in FP16_CASTS:
                continue
            value = self.ctx.flow.value_of(call)
            if value is not None and value.kind == "module" and value.may_be("fp16"):
                found = call
        return found

    def _loss_scaling(self, facts) -> str | None:
        for scaler in facts.scalers:
            enabled, _ = scaler_enabled(self.ctx, scaler)
            if enabled is not False:
                return f"GradScaler (line {_line(self.ctx, scaler)})"
        for call in facts.calls:
            name = call_name(call)
            if name.endswith("Arguments") and is_true(keyword(call, "fp16")):
                return f"`{name}(fp16=True)` (line {_line(self.ctx, call)})"
            if name == "Accelerator" and string_value(keyword(call, "mixed_precision")) == "fp16":
                return f"`Accelerator(mixed_precision=\"fp16\")` (line {_line(self.ctx, call)})"
        sources = precision_sources.sources_in(self.ctx.module, self.ctx.names, self.ctx)
        for source in sources:
            if source.framework == "lightning" and source.effect.scaler and not source.effect.conditional:
                return f"Lightning's {source.description} (line {_line(self.ctx, source.node)})"
        return None

    def _conditional_loss_scaling(self) -> str | None:
        """A framework that makes a GradScaler on some runs only (``Accelerator(mixed_precision=
        args.mixed_precision)`` whose flag offers "fp16"): the precision catalog's conditional sources."""
        for source in precision_sources.sources_in(self.ctx.module, self.ctx.names, self.ctx):
            if source.effect.scaler and source.effect.conditional and source.framework in SCALING_FRAMEWORKS:
                return f"{source.description} (line {_line(self.ctx, source.node)})"
        return None


# An accumulation boundary: ``if (step + 1) % accum_steps == 0`` or accelerate's sync flag.
BOUNDARY_WORDS = re.compile(r"accum|sync_gradients")
ACCUMULATION_HINT = re.compile(r"accum|sync_gradients|%[^\n%]*==\s*0")


class ScalerAccumulation(Rule):
    """## What it does
    Flags a gradient-accumulation loop (an `if (step + 1) % accum == 0:` boundary) in which some
    of `scaler.step`, `scaler.update` and `scaler.unscale_` run at the boundary and others run on
    every micro-step.

    ## Why is this bad?
    The loss scale must stay constant across the micro-batches of one effective batch, and
    `step`/`update`/`unscale_` must run once per optimizer step (PyTorch's AMP examples, "Gradient
    accumulation"). An `update()` per micro-step changes the scale mid-accumulation, so the summed
    gradients mix scales; a `step()` per micro-step defeats the accumulation; an `unscale_` at the
    boundary with `step` outside raises "unscale_() has already been called on this optimizer".

    ## Example
    ```python
    for i, batch in enumerate(loader):
        scaler.scale(model(batch) / accum).backward()
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            optimizer.zero_grad()
        scaler.update()
    ```

    ## Use instead
    ```python
    for i, batch in enumerate(loader):
        scaler.scale(model(batch) / accum).backward()
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    ```

    ## Fix safety
    No fix: which statements belong to the boundary is the author's call.
    """

    code = "DTL306"
    name = "scaler-accumulation"
    summary = "GradScaler step/update split across a gradient-accumulation boundary"
    queries = (
        "the GradScaler protocol of the file: its `step`, `update` and `unscale_` calls (facts/scaler.py); the accumulation boundary around each is read from the syntax",
    )
    # Scaler events (``.step``/``.update``/``.unscale_`` of a receiver named like a scaler or bound
    # to a GradScaler call, see dtype_lint.facts.scaler.is_scaler).
    triggers = ("scaler", "GradScaler")
    required_triggers = ((exact_word("step"), exact_word("update"), exact_word("unscale_")),)
    valid = (
        "for i, batch in enumerate(loader):\n    scaler.scale(model(batch) / accum).backward()\n"
        "    if (i + 1) % accum == 0:\n        scaler.step(optimizer)\n        scaler.update()\n        optimizer.zero_grad()\n",
        "for batch in loader:\n    scaler.scale(model(batch)).backward()\n    scaler.step(optimizer)\n    scaler.update()\n",
    )
    invalid = (
        Invalid(
            "for i, batch in enumerate(loader):\n    scaler.scale(model(batch) / accum).backward()\n"
            "    if (i + 1) % accum == 0:\n        scaler.step(optimizer)\n        optimizer.zero_grad()\n    scaler.update()\n"
        ),
        Invalid(
            "for step, batch in enumerate(loader):\n    scaler.scale(loss_fn(model, batch)).backward()\n"
            "    if (step + 1) % args.gradient_accumulation_steps == 0:\n        scaler.unscale_(optimizer)\n"
            "        clip(model.parameters(), 1.0)\n    scaler.step(optimizer)\n    scaler.update()\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        if not ACCUMULATION_HINT.search(self.ctx.text):
            return  # no accumulation boundary to split across: spare the scaler facts
        scaler_facts = self.ctx.scaler
        kinds = (Kind.STEP, Kind.UPDATE, Kind.UNSCALE)
        reported: set[int] = set()
        for event in scaler_facts.events:
            if event.kind not in kinds or event.loop is None or id(event.loop) in reported:
                continue
            loop = event.loop
            group = [
                other for other in scaler_facts.iteration(event)
                if other.kind in kinds and other.scaler == event.scaler and other.loop is loop
            ]
            inside, outside = [], []
            boundary = None
            for other in group:
                found = self._boundary(other.call, loop)
                if found is not None:
                    boundary = boundary or found
                    inside.append(other)
                else:
                    outside.append(other)
            if not inside or not outside or boundary is None:
                continue
            reported.add(id(loop))
            first = outside[0]
            at_boundary = ", ".join(f"`{self.ctx.code_for(e.call)}`" for e in inside)
            self.report(
                first.call,
                f"`{self.ctx.code_for(first.call)}` runs on every micro-step but {at_boundary} only at the"
                f" accumulation boundary (line {_line(self.ctx, boundary)}): the loss scale must stay fixed across"
                " an effective batch and step/update/unscale_ run once per optimizer step",
                confidence=Confidence.MEDIUM,
            )

    def _boundary(self, call: cst.Call, loop: cst.CSTNode) -> cst.If | None:
        """The accumulation ``if`` around ``call`` inside ``loop``, or None."""
        current = self.ctx.parent(call)
        while current is not None and current is not loop:
            if isinstance(current, cst.If) and self._is_boundary(current.test):
                return current
            current = self.ctx.parent(current)
        return None

    def _is_boundary(self, test: cst.BaseExpression) -> bool:
        for node in walk(test):
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
                return True
            if isinstance(node, cst.Name) and BOUNDARY_WORDS.search(node.value):
                return True
        return False


# Names and strings that show the file runs some low precision (autocast, casts, AMP flags).
LOW_PRECISION_HINT = re.compile(r"autocast|half|float16|fp16|bf16|precision|mixed|(^|_)amp(_|$)|lowp", re.IGNORECASE)


def mentions_low_precision(ctx) -> bool:
    """Any identifier or string (docstrings and comments aside) that hints at low precision;
    ``torch.amp`` / ``torch.cuda.amp`` themselves are module paths, not hints."""
    for node, text in code_words(ctx.module):
        if text == "amp" and any(q.startswith("torch") for q in ctx.names.qualified_names(node)):
            continue
        if LOW_PRECISION_HINT.search(text):
            return True
    return False


class ScalerWithoutLowp(Rule):
    """## What it does
    Flags an enabled `GradScaler` that scales a loss (`scaler.scale(loss).backward()`) in a file
    where nothing runs in low precision: no autocast, no `.half()`, no float16/bfloat16 dtype, no
    precision or AMP setting at all. With
    `--min-confidence low` it also flags a scaler and an autocast switched on by different flags
    (`GradScaler(enabled=args.fp16)` with `autocast(enabled=args.amp)`).

    ## Why is this bad?
    Loss scaling exists only to keep fp16 gradients from underflowing. In a float32 loop it
    multiplies every loss by 65536, skips steps whenever that overflows and keeps growing the
    scale: wasted work and occasional skipped updates, and a sign that the autocast the author
    meant to add is missing.

    ## Example
    ```python
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        loss = criterion(model(x), y)
        scaler.scale(loss).backward()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
    ```

    ## Fix safety
    No fix: either autocast is missing or the scaler is superfluous.
    """

    code = "DTL307"
    name = "scaler-without-lowp"
    summary = "GradScaler in a loop with no low precision"
    queries = (
        "the GradScaler constructions of the file (facts/training.py) and whether one scales a loss (facts/scaler.py)",
        "whether a scaler is enabled: a literal, or a config setting true in every config file (facts/amp.py, facts/config_values.py)",
        "whether any name or string of the file hints at low precision (autocast, half, fp16, amp...), read from the syntax by the rule itself (rules/scaler_dtype.py `mentions_low_precision`); no dtype flow",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    # A GradScaler construction, and either ``<scaler>.scale(loss).backward()`` or an autocast
    # whose ``enabled=`` flag differs: (scale or autocast) and (backward or autocast).
    triggers = ("GradScaler",)
    required_triggers = (
        (exact_word("scale"), exact_word("autocast")),
        (exact_word("backward"), exact_word("autocast")),
    )
    valid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda'):\n    loss = model(x)\nscaler.scale(loss).backward()\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=args.fp16)\nloss = model(x)\nscaler.scale(loss).backward()\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=use_amp)\nwith torch.autocast('cuda', enabled=use_amp):\n    loss = model(x)\n",
        "import torch\n\nscaler = torch.amp.GradScaler('cuda')\n",
    )
    invalid = (
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda')\nfor x, y in loader:\n    loss = criterion(model(x), y)\n"
            "    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n"
        ),
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=args.fp16)\n"
            "with torch.autocast('cuda', enabled=args.amp):\n    loss = model(x)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        facts = training_facts(self.ctx)
        if not facts.scalers:
            return
        no_low_precision = not mentions_low_precision(self.ctx)
        for scaler in facts.scalers:
            enabled, enabled_node = scaler_enabled(self.ctx, scaler)
            if enabled is True and no_low_precision and self._scales_a_loss():
                self.report(
                    scaler,
                    "GradScaler is enabled but nothing in this file runs in float16 (no autocast, no half"
                    " casts, no precision setting): loss scaling only serves fp16 gradients; add the"
                    " autocast or drop the scaler",
                    confidence=Confidence.MEDIUM,
                )
            elif enabled is None:
                self._different_flags(facts, scaler, enabled_node)

    def _scales_a_loss(self) -> bool:
        """The file runs a training step with the scaler (``scaler.scale(loss).backward()``):
        a scaler that is only constructed here may serve code elsewhere."""
        return any(event.kind is Kind.SCALED_BACKWARD for event in self.ctx.scaler.events)

    def _different_flags(self, facts, scaler: cst.Call, enabled_node: cst.BaseExpression) -> None:
        scaler_flag = dotted_name(enabled_node)
        if scaler_flag is None:
            return
        for call in facts.calls:
            if not self.ctx.names.matches(call.func, "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast"):
                continue
            flag_node = keyword(call, "enabled")
            autocast_flag = dotted_name(flag_node) if flag_node is not None else None
            if autocast_flag is None or autocast_flag == scaler_flag:
                continue
            self.report(
                scaler,
                f"GradScaler is switched on by `{scaler_flag}` but the autocast at line {_line(self.ctx, call)} by"
                f" `{autocast_flag}`: when they differ the scaler runs on float32 gradients (or fp16 runs unscaled)",
                confidence=Confidence.LOW,
            )
            return

"""Library precision APIs used against their grain: DTL406 weight-dtype-from-args."""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.amp import DTYPE_NAMES
from dtype_lint.facts.devices import argparse_default
from dtype_lint.facts.ema_updates import ema_updates
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import keyword, training_facts
from dtype_lint.facts.flow.seeding import WorldOrigin
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule

ACCELERATOR = ("accelerate.Accelerator", "accelerate.accelerator.Accelerator")
_PRECISIONS = ("fp16", "bf16", "fp8")


class WeightDtypeFromArgs(Rule):
    """## What it does
    In a script that builds an `accelerate.Accelerator`, flags the branch that picks the frozen
    weights' dtype from the command-line flag, `if args.mixed_precision == "fp16": weight_dtype
    = torch.float16`, instead of from `accelerator.mixed_precision`.

    ## Why is this bad?
    `accelerate launch --mixed_precision fp16` and the `accelerate config` file set the
    precision without the script's own `--mixed_precision` flag, which then stays at its
    default (None or "no"): the Accelerator trains in fp16 while `weight_dtype` stays float32,
    so the frozen VAE/text encoder run in float32 (memory doubled, and inputs cast to
    `weight_dtype` no longer match), or the reverse when the flag and the config disagree
    (huggingface/diffusers#1272, #1359; the diffusers training scripts read
    `accelerator.mixed_precision` for this reason, see the discussion on #2994).

    ## Example
    ```python
    accelerator = Accelerator(mixed_precision=args.mixed_precision)
    weight_dtype = torch.float32
    if args.mixed_precision == "fp16":
        weight_dtype = torch.float16
    ```

    ## Use instead
    ```python
    if accelerator.mixed_precision == "fp16":
        weight_dtype = torch.float16
    ```

    Not flagged where the flag decides: the file passes it to `Accelerator(mixed_precision=...)`
    and its `add_argument` default is a string (`"no"`), never None; accelerate reads the
    launcher's setting only when the argument is None.

    ## Fix safety
    Unsafe: it replaces the flag with `<accelerator>.mixed_precision`, which changes the dtype
    whenever the launcher's setting differs from the flag. Medium confidence: a script run
    only with its own flag (never `accelerate launch --mixed_precision`) behaves the same. Low
    (not shown at the default `--min-confidence medium`) where the file passes the flag to
    `Accelerator(mixed_precision=...)`: the two then differ only when the flag is left out,
    and the branch falls back to the script's own default dtype (float32 frozen weights under
    the launcher's autocast cost memory, they do not mismatch).
    """

    code = "DTL406"
    name = "weight-dtype-from-args"
    summary = "weight_dtype chosen from args.mixed_precision instead of accelerator.mixed_precision"
    queries = (
        "the argparse default of a flag (facts/devices.py `argparse_default`)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    fix_safety = Safety.UNSAFE
    triggers = (exact_word("mixed_precision"),)
    required_triggers = ((exact_word("Accelerator"),),)
    valid = (
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator(mixed_precision=args.mixed_precision)\n"
        "weight_dtype = torch.float32\nif accelerator.mixed_precision == 'fp16':\n    weight_dtype = torch.float16\n",
        # no Accelerator in the file: the flag is the only source
        "import torch\nweight_dtype = torch.float32\nif args.mixed_precision == 'fp16':\n    weight_dtype = torch.float16\n",
        # the flag, never None, is what the Accelerator is given: it decides (sd-scripts)
        "import argparse\nimport torch\nfrom accelerate import Accelerator\np = argparse.ArgumentParser()\n"
        "p.add_argument('--mixed_precision', default='no', choices=['no', 'fp16', 'bf16'])\nargs = p.parse_args()\n"
        "accelerator = Accelerator(mixed_precision=args.mixed_precision)\n"
        "weight_dtype = torch.float16 if args.mixed_precision == 'fp16' else torch.float32\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator(mixed_precision=args.mixed_precision)\n"
            "weight_dtype = torch.float32\nif args.mixed_precision == 'fp16':\n    weight_dtype = torch.float16\n",
            fixed="import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator(mixed_precision=args.mixed_precision)\n"
            "weight_dtype = torch.float32\nif accelerator.mixed_precision == 'fp16':\n    weight_dtype = torch.float16\n",
        ),
        Invalid(
            "import torch\nfrom accelerate import Accelerator\ndef main(cfg):\n    acc = Accelerator()\n"
            "    dtype = torch.bfloat16 if cfg.mixed_precision == 'bf16' else torch.float32\n",
            fixed="import torch\nfrom accelerate import Accelerator\ndef main(cfg):\n    acc = Accelerator()\n"
            "    dtype = torch.bfloat16 if acc.mixed_precision == 'bf16' else torch.float32\n",
        ),
        # a flag that defaults to None leaves the precision to `accelerate launch` (diffusers#1272)
        Invalid(
            "import argparse\nimport torch\nfrom accelerate import Accelerator\np = argparse.ArgumentParser()\n"
            "p.add_argument('--mixed_precision', default=None, choices=['no', 'fp16', 'bf16'])\nargs = p.parse_args()\n"
            "accelerator = Accelerator(mixed_precision=args.mixed_precision)\n"
            "weight_dtype = torch.float16 if args.mixed_precision == 'fp16' else torch.float32\n"
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._accelerators: list[str] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call) and self.ctx.names.matches(node.value.func, *ACCELERATOR):
            for target in node.targets:
                name = dotted_name(target.target)
                if name is not None:
                    self._accelerators.append(name)

    def visit_If(self, node: cst.If) -> None:
        flag = self._flag(node.test)
        if flag is not None and self._body_selects_dtype(node.body):
            self._report(flag)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        flag = self._flag(node.test)
        if flag is not None and self._is_dtype(node.body):
            self._report(flag)

    def _flag(self, test: cst.BaseExpression) -> cst.Attribute | None:
        """``<not the accelerator>.mixed_precision == "fp16"`` -> the attribute."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return None
        if not isinstance(test.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
            return None
        left, right = test.left, test.comparisons[0].comparator
        if isinstance(left, cst.SimpleString):
            left, right = right, left
        if not (isinstance(right, cst.SimpleString) and right.evaluated_value in _PRECISIONS):
            return None
        if not (isinstance(left, cst.Attribute) and left.attr.value == "mixed_precision"):
            return None
        owner = dotted_name(left.value)
        if owner is None or owner in self._accelerators or "accelerator" in owner.lower() or "state" in owner.lower():
            return None
        return left

    def _body_selects_dtype(self, body: cst.BaseSuite) -> bool:
        for statement in getattr(body, "body", ()):
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign) and self._is_dtype(small.value):
                        return True
        return False

    def _is_dtype(self, expr: cst.BaseExpression) -> bool:
        return any(name in DTYPE_NAMES for name in self.ctx.names.qualified_names(expr))

    def _report(self, flag: cst.Attribute) -> None:
        if not self._accelerators and not self._constructs_accelerator():
            return
        if self._flag_decides(flag):
            return
        # The flag is what the Accelerator is given: the two agree whenever the flag is set, and
        # differ only when it is left out (None) and the launcher sets the precision. Then the
        # branch takes its fallback, the script's own default dtype: float32 frozen weights under
        # the launcher's autocast (memory, not a dtype mismatch; diffusers#1272, #9601) or a
        # validation pipeline in the script's default. A flag the Accelerator never sees can be
        # fp16 over a float32 Accelerator (no autocast): half encoder outputs into float32 weights.
        confidence = Confidence.LOW if self._flag_passed(flag) else Confidence.MEDIUM
        fix = None
        if self._accelerators:
            fix = Fix(Safety.UNSAFE, (self.replace(flag.value, self._accelerators[0]),), "read the Accelerator's precision")
        owner = self.ctx.code_for(flag.value).strip()
        accelerator = self._accelerators[0] if self._accelerators else "accelerator"
        self.report(
            flag,
            f"the weights' dtype follows `{owner}.mixed_precision`, but `accelerate launch`/`accelerate config` can set "
            f"the precision without this flag: read `{accelerator}.mixed_precision` instead",
            confidence=confidence,
            fix=fix,
        )

    def _constructs_accelerator(self) -> bool:
        return bool(self._accelerator_calls())

    def _accelerator_calls(self) -> list[cst.Call]:
        # the context's one walk, in source order (a libcst visitor rebuilds every node it passes)
        return [node for node in self.ctx.all_nodes
                if isinstance(node, cst.Call) and self.ctx.names.matches(node.func, *ACCELERATOR)]

    def _flag_passed(self, flag: cst.Attribute) -> bool:
        """``Accelerator(mixed_precision=<the flag>)`` somewhere in the file."""
        name = dotted_name(flag)
        return any(dotted_name(keyword(call, "mixed_precision") or cst.Name("None")) == name
                   for call in self._accelerator_calls())

    def _flag_decides(self, flag: cst.Attribute) -> bool:
        """``Accelerator(mixed_precision=args.mixed_precision)`` with ``add_argument(
        "--mixed_precision", default="no")``: accelerate takes the launcher's setting only when
        the argument is None, and this flag never is, so the Accelerator's precision is the flag
        (sd-scripts' train_util.py). A flag that defaults to None still leaves it to the launcher."""
        if not self._flag_passed(flag):
            return False
        default = argparse_default(self.ctx, flag.attr.value)
        return isinstance(default, cst.SimpleString)


# -- DTL511 ------------------------------------------------------------------------------------
# EMA helpers by class name: diffusers, timm, torch.optim.swa_utils, torch_ema, ema_pytorch.
# Each keeps its shadow copy in the dtype of what it is given.
EMA_CLASSES = frozenset({"EMAModel", "ModelEma", "ModelEmaV2", "ModelEmaV3", "AveragedModel", "ExponentialMovingAverage", "EMA"})


class LowpEma(Rule):
    """## What it does
    Flags an exponential moving average built over a model or parameters that the dtype flow
    knows are float16 or bfloat16: diffusers' `EMAModel`, timm's `ModelEma`/`ModelEmaV2`/
    `ModelEmaV3`, `torch.optim.swa_utils.AveragedModel`, torch_ema's
    `ExponentialMovingAverage` and ema_pytorch's `EMA`, given e.g.
    `copy.deepcopy(unet).to(dtype=weight_dtype)` or the parameters of a `.half()` model; and
    such an EMA object moved with a low dtype after it was built (`ema_unet.to(device,
    dtype=weight_dtype)`: diffusers' `EMAModel.to` casts its shadow weights). Also a moving
    average written by hand (ultralytics' `ModelEMA`, a momentum teacher): a loop over a float16/
    bfloat16 module's own tensors (`for k, v in self.ema.state_dict().items()`,
    `zip(ema.parameters(), model.parameters())`, `named_parameters()`) that updates each in place
    with a decay (`v *= d; v += (1 - d) * w`, `p.mul_(d).add_(w, alpha=1 - d)`, `p.lerp_(w, 1 - d)`),
    reported where the copy was made low precision (`deepcopy(model).half()`) when that is in the
    file (dtype_lint/facts/ema_updates.py).

    ## Why is this bad?
    These helpers keep their shadow weights in the dtype they receive. With a decay of 0.999
    or 0.9999 each update moves a weight by 1e-3 to 1e-4 of its difference from the live one,
    far below half a unit in the last place of float16 (1e-3 relative) or bfloat16 (4e-3):
    the update rounds to zero and the EMA never leaves its initial weights
    (d8ahazard/sd_dreambooth_extension#1415 and #1417, NUS-HPC-AI-Lab/VideoSys#6,
    PaddlePaddle/PaddleMIX#515: "use float32 for the EMA model").

    ## Example
    ```python
    ema_unet = EMAModel(copy.deepcopy(unet).to(dtype=weight_dtype))  # weight_dtype: fp16
    ```

    ## Use instead
    ```python
    ema_unet = EMAModel(copy.deepcopy(unet).to(dtype=torch.float32))
    ```

    Not flagged: an EMA given `dtype=` (timm's `ModelEmaV3(..., dtype=torch.float32)` keeps a
    float32 copy) and a bfloat16 `ModelEmaV3` with its default stochastic rounding.

    ## Fix safety
    No fix: keeping the EMA in float32 costs memory the author may need to budget. High
    confidence when the argument is low precision on every path and certain, medium otherwise.
    """

    code = "DTL511"
    name = "lowp-ema"
    summary = "EMA of a float16/bfloat16 model: updates round to zero"
    queries = (
        "the dtype flow: the dtype of the model or parameters an EMA is built over, and the dtype it is moved with (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the assignments that built the EMA object (facts/training.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "a moving average written by hand: in-place decay updates of a module's own tensors in a loop over them (facts/ema_updates.py)",
    )
    # an EMA class, or a moving average written by hand over a module's own tensors
    triggers = tuple(exact_word(name) for name in sorted(EMA_CLASSES)) + tuple(
        exact_word(name) for name in ("state_dict", "parameters", "named_parameters", "buffers")
    )
    required_triggers = ((exact_word("float16"), exact_word("bfloat16"), exact_word("half"), exact_word("bf16"), exact_word("fp16")),)
    valid = (
        "import copy\nimport torch\nfrom diffusers.training_utils import EMAModel\nunet = torch.nn.Linear(4, 4)\n"
        "ema = EMAModel(copy.deepcopy(unet).to(dtype=torch.float32))\nunet.half()\n",
        "import torch\nfrom timm.utils import ModelEmaV2\nmodel = torch.nn.Linear(4, 4)\nema = ModelEmaV2(model, decay=0.9998)\n"
        "with torch.autocast('cuda', dtype=torch.float16):\n    out = model(x)\n",
        # timm's float32 EMA of a bfloat16 model (timm tests/test_utils.py)
        "import torch\nfrom timm.utils.model_ema import ModelEmaV3\nmodel = torch.nn.Linear(16, 16).to(torch.bfloat16)\n"
        "ema = ModelEmaV3(model, decay=0.9998, dtype=torch.float32)\nema_sr = ModelEmaV3(model, decay=0.9998)\n",
    )
    invalid = (
        Invalid(
            "import copy\nimport torch\nfrom diffusers.training_utils import EMAModel\nunet = torch.nn.Linear(4, 4)\n"
            "ema = EMAModel(copy.deepcopy(unet).to(dtype=torch.float16))\n"
        ),
        Invalid(
            "import torch\nfrom torch.optim.swa_utils import AveragedModel\nmodel = torch.nn.Linear(4, 4).bfloat16()\n"
            "ema = AveragedModel(model)\n"
        ),
        # a moving average written by hand: the state_dict's tensors are the half copy's own
        Invalid(
            "import copy\nimport torch\nmodel = torch.nn.Linear(4, 4)\nema = copy.deepcopy(model).half()\n"
            "def update(d=0.999):\n    msd = model.state_dict()\n    for k, v in ema.state_dict().items():\n"
            "        v *= d\n        v += (1 - d) * msd[k]\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        """A moving average written by hand (facts/ema_updates.py) over a float16/bfloat16 module."""
        seen = set()
        for update in ema_updates(self.ctx):
            value = self.ctx.flow.value_of(update.module)
            if value is None or value.kind not in ("module", "params", "tensor") or not value.dtypes:
                continue
            if not value.dtypes <= frozenset({"fp16", "bf16"}):
                continue
            dtype = "float16" if "fp16" in value.dtypes else "bfloat16"
            origin = value.origin_of("fp16" if "fp16" in value.dtypes else "bf16")
            made_here = origin is not None and not isinstance(origin, WorldOrigin) and self.ctx.is_within(origin.node, node)
            anchor = origin.node if made_here else update.update
            if id(anchor) in seen:
                continue  # two loops over one EMA copy: one finding at its cast
            seen.add(id(anchor))
            module = self.ctx.code_for(update.module).strip()
            loop_line = self.ctx.position(update.loop).start.line
            self.report(
                anchor,
                f"`{module}` is {value.describe()} {value.since()}, and the loop at line {loop_line} updates its own"
                f" tensors in place as a moving average (`{self.ctx.code_for(update.update).strip().splitlines()[0]}`):"
                f" the update is rounded to {dtype}, where (1 - decay) x the difference is below half a unit in the"
                " last place and rounds to zero, so the average stalls; keep the EMA copy in float32",
                confidence=Confidence.HIGH if value.certain else Confidence.MEDIUM,
            )

    def _ema_class(self, call: cst.BaseExpression) -> str | None:
        if not isinstance(call, cst.Call):
            return None
        name = None
        for qualified in self.ctx.names.qualified_names(call.func):
            name = qualified.rsplit(".", 1)[-1]
        if name is None:
            dotted = dotted_name(call.func)
            name = dotted.rsplit(".", 1)[-1] if dotted else None
        return name if name in EMA_CLASSES else None

    def _cast_after(self, node: cst.Call) -> None:
        """``ema_unet.to(device, dtype=weight_dtype)`` on an EMA object built in this file:
        diffusers' ``EMAModel.to`` (and the modules the others wrap) casts the shadow weights."""
        receiver = dotted_name(node.func.value)
        dtype = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "dtype"), None)
        if receiver is None or dtype is None:
            return
        start = self.ctx.source_order(node)[0]
        built = [value for assign, value in training_facts(self.ctx).assignments.get(receiver, [])
                 if self.ctx.source_order(assign)[1] < start and self._ema_class(value) is not None]
        if not built:
            return
        value = self.ctx.flow.value_of(dtype)
        if value is None or value.kind != "dtype" or not value.dtypes & {"fp16", "bf16"}:
            return
        low = "float16" if "fp16" in value.dtypes else "bfloat16"
        self.report(
            node,
            f"this casts the shadow weights of `{receiver}` (a `{self._ema_class(built[-1])}` built at line"
            f" {self.ctx.position(built[-1]).start.line}) to `{self.ctx.code_for(dtype).strip()}`, which is"
            f" {value.describe()} {value.since()}: an update of (1 - decay) x the difference is below {low}'s"
            " resolution and rounds to zero, so the EMA never moves; keep the EMA in float32 (`.to(device)` only)",
            confidence=Confidence.HIGH if value.certain else Confidence.MEDIUM,
        )

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "to":
            self._cast_after(node)
            return
        name = None
        for qualified in self.ctx.names.qualified_names(node.func):
            name = qualified.rsplit(".", 1)[-1]
        if name is None:
            dotted = dotted_name(node.func)
            name = dotted.rsplit(".", 1)[-1] if dotted else None
        if name not in EMA_CLASSES:
            return
        target = next((a for a in node.args if a.keyword is None or a.keyword.value in ("model", "parameters")), None)
        if target is None:
            return
        if any(a.keyword is not None and a.keyword.value == "dtype" for a in node.args):
            return  # timm's ModelEmaV3(dtype=torch.float32) keeps its own float32 copy
        value = self.ctx.flow.value_of(target.value)
        if value is None or value.kind not in ("module", "params", "tensor") or not value.dtypes:
            return
        if not value.dtypes <= frozenset({"fp16", "bf16"}):
            return
        if name == "ModelEmaV3" and value.dtypes == {"bf16"} and not self._rounding_off(node):
            return  # bfloat16 updates use stochastic rounding by default (timm >= 1.0.20)
        confidence = Confidence.HIGH if value.certain else Confidence.MEDIUM
        dtype = "float16" if "fp16" in value.dtypes else "bfloat16"

        self.report(
            node,
            f"`{name}` keeps its shadow weights in the dtype of `{self.ctx.code_for(target.value).strip()}`, which is "
            f"{value.describe()} {value.since()}: an update of (1 - decay) x the difference is below {dtype}'s "
            "resolution and rounds to zero, so the EMA never moves; build it from a float32 copy",
            confidence=confidence,
        )

    @staticmethod
    def _rounding_off(node: cst.Call) -> bool:
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "stochastic_rounding":
                return isinstance(arg.value, cst.Name) and arg.value.value == "False"
        return False

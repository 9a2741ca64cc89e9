"""DTL2xx rules that need to know an autocast region's device and dtype: wrong device, bf16
without a capability check, losses outside the region, conflicting nested regions, and fp16
autocast without a loss scaler."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts import config_values, flag_logic
from dtype_lint.facts.amp import AutocastInfo, dtype_literal, literal_string
from dtype_lint.facts.deliberate import is_benchmark_file, requires_bf16_hardware
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.safe_context import loss_upcasts_inputs, without_grad
from dtype_lint.facts.training import (
    call_name,
    calls_in,
    is_backward,
    is_scaled_backward,
    is_true,
    keyword,
    positional,
    receiver,
    steps_an_optimizer,
    string_value,
    training_facts,
    walk,
)
from dtype_lint.findings import Confidence
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.versions import at_least, only_before

# What torch.autocast accepts as device_type (torch 2.13: "Expected one of cpu, cuda, ... device").
AUTOCAST_DEVICES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
    "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)
# Spellings people reach for that torch rejects, with what they meant.
WRONG_DEVICES = {"gpu": "cuda", "tpu": "xla"}


def _line(ctx, node: cst.CSTNode) -> int:
    return ctx.position(node).start.line


def _describe_autocast(ctx, info: AutocastInfo) -> str:
    node = info.node
    return f"`{ctx.code_for(node.func)}(...)` at line {_line(ctx, node)}" if node is not None else "autocast"


class AutocastDeviceMismatch(Rule):
    """## What it does
    Flags an autocast whose `device_type` is not one torch knows (`"gpu"`, `"CUDA"`), and an
    autocast for one device in a script that places its model and data only on another
    (`torch.autocast("cuda")` with `device = torch.device("cpu")` everywhere, or
    `torch.autocast("cpu")` when everything is moved to `"cuda"`).

    ## Why is this bad?
    Autocast acts on operations of its own device only. `"gpu"` raises "Expected one of cpu,
    cuda, ... device string: gpu"; a CUDA autocast without CUDA disables itself with a warning
    and a CPU autocast around CUDA tensors does nothing: the matmuls silently run in float32.
    `device_type=str(self.device)` is "cuda:0" once the device has an index, which many torch
    releases reject ("User specified an unsupported autocast device_type 'cuda:0'",
    mosaicml/llm-foundry#302); `self.device.type` is the device type.

    ## Example
    ```python
    device = torch.device("cpu")
    model = Net().to(device)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(x.to(device))
    ```

    ## Use instead
    ```python
    with torch.autocast(device.type, dtype=torch.bfloat16):
        out = model(x.to(device))
    ```

    ## Fix safety
    No fix: whether the device or the autocast is wrong is the author's call.
    """

    code = "DTL202"
    name = "autocast-device-mismatch"
    summary = "Autocast for a device the tensors are not on"
    queries = (
        "the autocast's `device_type`, and the devices the file's `torch.device`/`.to()` calls name, followed through assignments (facts/training.py, facts/amp.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    # A ``torch.autocast`` / ``torch.amp.autocast`` call: its last name part is the word "autocast".
    triggers = (exact_word("autocast"),)
    valid = (
        "import torch\ndevice = torch.device('cuda')\nmodel.to(device)\nwith torch.autocast('cuda', dtype=torch.float16):\n    out = model(x)\n",
        "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nwith torch.autocast(device.type):\n    out = model(x)\n",
        "import torch\nmodel = model.to('cpu')\nwith torch.autocast('cpu', dtype=torch.bfloat16):\n    out = model(x)\n",
        "import torch\nmodel.to(args.device)\nwith torch.autocast('cuda'):\n    out = model(x)\npreds = out.to('cpu')\n",
    )
    invalid = (
        Invalid("import torch\nwith torch.autocast('gpu', dtype=torch.float16):\n    out = model(x)\n"),
        Invalid("import torch\nwith torch.autocast(device_type=str(self.device), dtype=torch.float16):\n    out = model(x)\n"),
        Invalid(
            "import torch\ndevice = torch.device('cpu')\nmodel = Net().to(device)\n"
            "with torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n    out = model(x.to(device))\n"
        ),
        Invalid(
            "import torch\nmodel = Net().cuda()\nx = x.to('cuda')\nwith torch.autocast('cpu', dtype=torch.bfloat16):\n    out = model(x)\n"
        ),
        Invalid(
            "import torch\ndevice = 'cpu'\nmodel.to(device)\nwith torch.autocast('cuda'):\n    out = model(x.to(device))\npreds = out.to('cpu')\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        facts = training_facts(self.ctx)
        info = facts.autocast_of_expression(node)
        if info is None or info.node is not node or not self.ctx.names.matches(node.func, "torch.autocast", "torch.amp.autocast"):
            return
        device_node = keyword(node, "device_type")
        if device_node is None:
            device_node = positional(node, 0)
        indexed = self._device_with_index(device_node)
        if indexed is not None:
            self.report(
                device_node,
                f"autocast device_type {indexed}: a device string with an index ('cuda:0') is not a device type;"
                " many torch releases raise \"User specified an unsupported autocast device_type 'cuda:0'\" and"
                " the others skip CUDA autocast's own checks (bf16 support, CUDA availability); pass the"
                " device's `.type`",
                confidence=Confidence.MEDIUM,
            )
            return
        device = literal_string(device_node)
        if device is None:
            return
        base = device.split(":")[0]
        if base not in AUTOCAST_DEVICES:
            meant = WRONG_DEVICES.get(base.lower()) or (base.lower() if base.lower() in AUTOCAST_DEVICES else None)
            if meant is not None:
                self.report(
                    device_node,
                    f"autocast device_type {device!r} is not a torch device type (raises \"Expected one of cpu,"
                    f" cuda, ...\"); use {meant!r}",
                    confidence=Confidence.HIGH,
                )
            return
        placements = self._placements(facts)
        if not placements:
            return
        if base == "cuda" and set(placements) == {"cpu"}:
            where = ", ".join(f"line {line}" for line in sorted(placements["cpu"])[:3])
            self.report(
                device_node,
                f"autocast is for 'cuda' but this script places its model and data on 'cpu' only ({where}):"
                " CUDA autocast disables itself without CUDA and the ops run in float32",
                confidence=Confidence.MEDIUM,
            )
        elif base == "cpu" and set(placements) == {"cuda"}:
            where = ", ".join(f"line {line}" for line in sorted(placements["cuda"])[:3])
            self.report(
                device_node,
                f"autocast is for 'cpu' but this script places its model and data on 'cuda' only ({where}):"
                " a CPU autocast leaves CUDA ops in float32",
                confidence=Confidence.MEDIUM,
            )

    @staticmethod
    def _device_with_index(device_node: cst.BaseExpression | None) -> str | None:
        """How ``device_type`` may carry a device index: ``str(self.device)`` (a ``torch.device``
        prints as "cuda:0" once it has one), an f-string ``f"cuda:{rank}"``, a literal "cuda:0"."""
        if isinstance(device_node, cst.Call) and isinstance(device_node.func, cst.Name) and device_node.func.value == "str":
            if len(device_node.args) == 1 and re.search(r"device|dev$", dotted_name(device_node.args[0].value) or ""):
                return f"`str({dotted_name(device_node.args[0].value)})` is the device's full name"
            return None
        if isinstance(device_node, cst.FormattedString):
            text = "".join(part.value for part in device_node.parts if isinstance(part, cst.FormattedStringText))
            if text.endswith(":"):
                return "is formatted with an index"
            return None
        device = literal_string(device_node)
        if device is not None and re.fullmatch(r"[a-z]+:\d+", device) and device.split(":")[0] in AUTOCAST_DEVICES:
            return f"{device!r} names one device"
        return None

    def _placements(self, facts) -> dict[str, list[int]]:
        """Device types this file places things on (literal strings, names holding one); {} when
        the device is chosen at run time anywhere (``is_available()``, ``args.device``)."""
        cached = getattr(self, "_placements_cache", None)
        if cached is not None:
            return cached
        found: dict[str, list[int]] = {}
        unsure = False
        for call in facts.calls:
            name = call_name(call)
            if self.ctx.names.matches(call.func, "torch.cuda.is_available"):
                unsure = True
                continue
            if name == "cuda" and isinstance(call.func, cst.Attribute) and not call.args:
                found.setdefault("cuda", []).append(_line(self.ctx, call))
                continue
            candidates = [keyword(call, "device"), keyword(call, "device_map")]
            is_device = self.ctx.names.matches(call.func, "torch.device") is not None
            if name == "to" or is_device:
                candidates.append(positional(call, 0))
            for expr in candidates:
                if expr is None:
                    continue
                value = string_value(expr)
                if value is not None and value.startswith("cpu") and name == "to" and not is_device:
                    continue  # ``out.to("cpu")`` fetches results; it says nothing about where the model runs
                choices = {value} if value is not None else facts.string_choices(expr)
                bases = {choice.split(":")[0] for choice in choices}
                text = dotted_name(expr) or ""
                if len(bases) == 1 and bases <= {"cpu", "cuda"}:
                    found.setdefault(next(iter(bases)), []).append(_line(self.ctx, call))
                elif bases or is_device or expr is not positional(call, 0) or re.search(r"device|rank|gpu", text):
                    # A run-time device (``args.device``, "auto", a mix): nothing is certain.
                    unsure = True
        result = {} if unsure else found
        self._placements_cache = result
        return result


AUTOCAST_FAILS = 'CUDA autocast raises "Current CUDA Device does not support bfloat16"'
TRAINER_FAILS = "bf16 training is refused (`is_bf16_supported()` is False there)"
# torch 2.3 made ``torch.cuda.is_bf16_supported()`` count emulated bf16 (its default
# ``including_emulation=True``): from then on a pre-Ampere GPU answers True, CUDA autocast and the
# frameworks' bf16 checks accept it, and bf16 runs (slowly). Before, the check was
# ``major >= 8`` alone: on torch 2.2.2 a V100 answers False (pytorch/pytorch#124996).
BF16_EMULATED = (2, 3)
# The examples' project is checked for torch 2.1 (``--target-torch 2.1``), where the failure is real.
OLD_TORCH = (("target_torch", "2.1"),)
# A project whose declarations admit only torch < 2.3 (``torch>=1.13,<2.3``), and one that admits
# the newest (``torch>=1.13``): its users install a torch that emulates bf16.
PINNED_OLD_TORCH = (("target_torch", "1.13"), ("torch_admits", ">=1.13,<2.3"))
FLOOR_ONLY_TORCH = (("target_torch", "1.13"), ("torch_admits", ">=1.13"))


def old_torch_clause(settings) -> str | None:
    """How the project runs a torch older than 2.3, or None when its users run a newer one: a
    configured ``target-torch`` is the torch checked; one read from the declarations is only the
    floor, and users install the newest release the declarations admit."""
    if settings.torch_admits is not None:
        if only_before(settings.torch_admits, BF16_EMULATED):
            return f"this project admits only torch `{settings.torch_admits}`"
        return None
    if at_least(settings.target_torch, BF16_EMULATED) is False:
        return f"the target torch is {settings.target_torch}"
    return None


class Bf16Unchecked(Rule):
    """## What it does
    Flags bfloat16 training on a GPU in a file that never checks the GPU supports it:
    `torch.autocast("cuda", dtype=torch.bfloat16)` (also via a config string, as in nanoGPT's
    `dtype = 'bfloat16'`), `TrainingArguments(bf16=True)`, `Accelerator(mixed_precision="bf16")`
    and Lightning's `precision="bf16-mixed"`. The
    framework settings may come from a config file or object the project reads
    (`Accelerator(mixed_precision=config["training"]["mixed_precision"])` with
    `mixed_precision = "bf16"` in config.toml, `TrainingArguments(bf16=opts.bf16)` with a
    dataclass default `bf16: bool = True`): medium confidence, the message naming the setting. A
    call to
    `torch.cuda.is_bf16_supported()` (or transformers' `is_torch_bf16_gpu_available`, accelerate's
    `is_bf16_available`, a `get_device_capability` check) anywhere in the file counts as the
    check; TPU scripts (`torch_xla`), FP8 training (`torchao.float8`, `transformer_engine`: Ada or
    Hopper GPUs only), CPU autocast and `Accelerator(cpu=True)` are never flagged, and neither
    are test files (`tests/`, `test_*.py`: a test suite runs on hardware its CI chose), a bf16
    choice beside a float16 fallback, nor `from_pretrained(dtype=torch.bfloat16)` (a bf16 load is
    mostly for inference, which older GPUs still run, and is usually deliberate): those were low
    confidence, and none of them read on unseen repositories was a defect. An autocast whose
    `dtype=` is a variable bound once to bf16 (`amp_dtype = torch.bfloat16`, nanoGPT's
    `dtype = 'bfloat16'`) is reported at that line, the one to change, once for all its autocasts.

    Reported only where the torch that runs is older than 2.3: a configured `target-torch`
    (`--target-torch 2.1`, `target-torch = "2.1"`), or, read from the project's dependencies, an
    upper bound or pin that admits no newer torch (`torch==2.1.0`, `torch>=1.13,<2.3`,
    `torch~=2.1.0`, conda's `pytorch=1.12.1`). A floor alone (`torch>=1.10`) is not enough: users
    install the newest torch a project admits, and from torch 2.3 on `is_bf16_supported()` counts
    emulated bf16, nothing raises on a pre-Ampere GPU and bf16 runs, only slowly. (On unseen
    repositories every finding made from a floor alone was false: accelerate's and peft's bf16
    examples declare `torch>=2.0`/`>=1.13` and run on any GPU with today's torch.) A project on an
    undeclared torch gets no finding either.

    ## Why is this bad?
    CUDA autocast raises "Current CUDA Device does not support bfloat16. Please switch dtype to
    float16." whenever `torch.cuda.is_bf16_supported()` is False, and the frameworks' bf16
    checks ask the same function (`TrainingArguments(bf16=True)` refuses to start,
    karpathy/nanoGPT#277). Before torch 2.3 that function answered False on every pre-Ampere GPU
    (a V100 on torch 2.2.2: pytorch/pytorch#124996), so a project that still supports such a torch
    fails there. The fallback is float32, not float16: a model pretrained in bf16 (Gemma, Qwen,
    Llama 3) can overflow float16's range.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x, y)
    ```

    ## Use instead
    ```python
    use_bf16 = torch.cuda.is_bf16_supported()  # False on pre-Ampere GPUs before torch 2.3
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):  # float32 otherwise
        loss = model(x, y)
    ```
    or raise the project's torch bound to 2.3.

    ## Fix safety
    No fix: the fallback (float32, or a newer torch) changes how the script runs.
    """

    code = "DTL203"
    name = "bf16-unchecked"
    summary = "bfloat16 on GPU without a capability check"
    queries = (
        "the file's bfloat16 settings (autocast dtypes, `TrainingArguments`/`Accelerator`/Lightning precision, followed through assignments) and whether it checks bf16 support or runs on XLA (facts/training.py, facts/amp.py)",
        "the values of settings read from config files and objects (facts/config_values.py)",
        "whether a decorator runs the code only where bf16 is supported (facts/deliberate.py)",
        "the oldest torch the project supports (`target-torch`, config.py, read from its dependency declarations by targets.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    # bf16: ``bf16=True`` / ``"bf16"`` / ``"bf16-mixed"`` (a word starting with "bf16") or a
    # ``bfloat16`` dtype literal; and the site: ``*Arguments``/``*Config``, ``Accelerator``,
    # ``Trainer``/``Fabric`` or an autocast call. Only Lightning's precision
    # string may hold bf16 inside a longer word, so without Trainer/Fabric the bf16 is a whole word.
    triggers = ("bf16", exact_word("bfloat16"))
    required_triggers = (
        (
            "Arguments", "Config", exact_word("Accelerator"), exact_word("Trainer"), exact_word("Fabric"),
            exact_word("autocast"),
        ),
        (exact_word("bf16"), exact_word("bfloat16"), exact_word("Trainer"), exact_word("Fabric")),
    )
    valid = (
        # No torch bound declared (or >= 2.3): bf16 is accepted everywhere, emulated where need be.
        "import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n",
        "import torch\ndtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n"
        "with torch.autocast('cuda', dtype=dtype):\n    loss = model(x)\n",
        "import torch\nwith torch.autocast('cpu', dtype=torch.bfloat16):\n    loss = model(x)\n",
        "from transformers import TrainingArguments\nfrom transformers.utils import is_torch_bf16_gpu_available\n"
        "args = TrainingArguments('out', bf16=is_torch_bf16_gpu_available())\n",
        "from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='bf16', cpu=True)\n",
    )
    invalid = (
        Invalid("import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n", targets=OLD_TORCH),
        Invalid("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='out', bf16=True)\n", targets=OLD_TORCH),
        Invalid(
            "import torch\ndtype = 'bfloat16'\nptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]\n"
            "ctx = torch.amp.autocast(device_type='cuda', dtype=ptdtype)\nwith ctx:\n    logits, loss = model(X, Y)\n",
            targets=OLD_TORCH,
        ),
        Invalid("from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='bf16')\n", targets=OLD_TORCH),
        Invalid("from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='bf16')\n",
                targets=PINNED_OLD_TORCH),
        Invalid(
            "import lightning as L\ndef setup(precision=None, tpu=False):\n    if precision is None:\n"
            "        precision = '32-true' if tpu else 'bf16-mixed'\n    return L.Fabric(precision=precision)\n",
            targets=OLD_TORCH,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        old_torch = old_torch_clause(self.ctx.settings)
        if old_torch is None:
            return  # torch >= 2.3 runs (or is admitted): bf16 is accepted on every CUDA GPU, emulated if need be
        facts = training_facts(self.ctx)
        if facts.bf16_guarded or facts.uses_xla or self._needs_fp8_hardware():
            return
        reported: set[int] = set()
        for call in facts.calls:
            found = self._bf16_site(facts, call)
            if found is None:
                continue
            anchor, what, consequence, confidence = found
            if id(anchor) in reported:
                continue
            reported.add(id(anchor))
            if requires_bf16_hardware(self.ctx, anchor):
                continue  # ``@RunIf(bf16_cuda=True)``: the decorator is the capability check
            self.report(
                anchor,
                f"{what} but this file never checks `torch.cuda.is_bf16_supported()`: on a pre-Ampere GPU"
                f" with torch < 2.3 ({old_torch}) {consequence};"
                " check it and fall back to float32 (not float16, which a bf16-pretrained model can overflow),"
                " or require torch >= 2.3",
                confidence=confidence,
            )

    def _bf16_site(self, facts, call: cst.Call):
        names = self.ctx.names
        if names.matches(call.func, "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast"):
            info = facts.autocast_of_expression(call)
            if info is None or info.enabled is False or info.device not in ("cuda", None):
                return None
            if info.device is None:
                # ``device_type=device_type`` where that name is "cuda" on some path (nanoGPT).
                device = keyword(call, "device_type")
                if device is None:
                    device = positional(call, 0)
                devices = {choice.split(":")[0] for choice in facts.string_choices(device)} if device is not None else set()
                if "cuda" not in devices:
                    return None
            dtypes, source = facts.autocast_dtypes(info)
            if "bfloat16" not in dtypes:
                return None
            confidence = Confidence.MEDIUM if dtypes == {"bfloat16"} else Confidence.LOW
            choice = self._choosing_line(facts, call)
            if choice is not None:
                # Reported where bf16 is chosen (the line to change), once for all its autocasts.
                return choice, (
                    f"bfloat16 is chosen here (`{self.ctx.code_for(choice)}`) for the CUDA autocast at line"
                    f" {_line(self.ctx, call)},"
                ), AUTOCAST_FAILS, confidence
            return call, f"CUDA autocast runs in bfloat16 ({source})", AUTOCAST_FAILS, confidence
        name = call_name(call)
        bf16 = keyword(call, "bf16")
        if is_true(bf16) and (name.endswith("Arguments") or name.endswith("Config")):
            return bf16, f"`{name}(bf16=True)` trains in bfloat16", TRAINER_FAILS, Confidence.MEDIUM
        settings = config_values.settings_of(self.ctx, bf16) if bf16 is not None else []
        if any(s.value is True for s in settings) and (name.endswith("Arguments") or name.endswith("Config")):
            # ``bf16=cfg.bf16`` with ``bf16: true`` in a config file (or a config class's default)
            return bf16, f"`{name}(bf16={self.ctx.code_for(bf16)})` trains in bfloat16", TRAINER_FAILS, Confidence.MEDIUM
        if name == "Accelerator" and not is_true(keyword(call, "cpu")):
            found = self._bf16_choice(facts, keyword(call, "mixed_precision"), "bf16")
            if found is not None:
                what, confidence = found
                return call, f"`Accelerator(mixed_precision={what})` trains in bfloat16", TRAINER_FAILS, confidence
        on_cpu = string_value(keyword(call, "accelerator")) == "cpu"
        if name in ("Trainer", "Fabric") and not on_cpu:
            found = self._bf16_choice(facts, keyword(call, "precision"), "bf16")
            if found is not None:
                what, confidence = found
                return call, f"Lightning `{name}(precision={what})` trains in bfloat16", TRAINER_FAILS, confidence
        return None

    def _needs_fp8_hardware(self) -> bool:
        """FP8 training (torchao's float8, Transformer Engine) runs only on Ada/Hopper GPUs, which
        all have native bf16 (Lightning's fp8_distributed_transformer examples)."""
        names = self.ctx.names
        return names.is_imported("torchao.float8") or names.is_imported("transformer_engine")

    def _choosing_line(self, facts, call: cst.Call) -> cst.CSTNode | None:
        """The one unconditional assignment that picks bf16 for an autocast's ``dtype=`` variable:
        ``ptdtype = torch.bfloat16``, or nanoGPT's ``dtype = 'bfloat16'`` that indexes
        ``ptdtype = {...}[dtype]``; None when the dtype is a literal or chosen on several paths."""
        argument = keyword(call, "dtype")
        if argument is None and self.ctx.names.matches(call.func, "torch.autocast", "torch.amp.autocast"):
            argument = positional(call, 1)
        value = self._single_assignment(facts, argument)
        if value is None:
            return None
        if dtype_literal(self.ctx.names, value) == "bfloat16":
            return value
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Dict) and len(value.slice) == 1:
            index = value.slice[0].slice
            key = self._single_assignment(facts, index.value) if isinstance(index, cst.Index) else None
            if key is not None and (string_value(key) or "").lower() in ("bfloat16", "bf16"):
                return key
        return None

    @staticmethod
    def _single_assignment(facts, expr: cst.BaseExpression | None) -> cst.BaseExpression | None:
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return None
        text = dotted_name(expr)
        assigned = facts.assignments.get(text or "", [])
        return assigned[0][1] if len(assigned) == 1 else None

    @staticmethod
    def _bf16_choice(facts, argument, prefix: str):
        """``(what, confidence)`` when a precision argument holds a bf16 string on some path.

        A literal is MEDIUM; a name whose assignments include a bf16 string (`precision =
        "32-true" if tpu else "bf16-mixed"`) is MEDIUM when no fp16 fallback is among its
        values (nothing else the script could run on a pre-Ampere GPU), LOW otherwise.
        """
        if argument is None:
            return None
        choices = facts.string_choices(argument)
        bf16 = sorted(c for c in choices if c.startswith(prefix))
        if not bf16:
            return None
        literal = string_value(argument)
        if literal is not None:
            return repr(literal), Confidence.MEDIUM
        fallback = any(c in ("fp16", "16", "16-mixed", "16-true") for c in choices)
        what = f"{facts.ctx.code_for(argument)} = {bf16[0]!r}"
        return what, Confidence.LOW if fallback else Confidence.MEDIUM


LOSS_FUNCTIONS = re.compile(
    r"(loss|criterion)|^(cross_entropy|nll_loss|mse_loss|l1_loss|smooth_l1_loss|huber_loss|kl_div"
    r"|binary_cross_entropy(_with_logits)?|ctc_loss|margin_ranking_loss|cosine_embedding_loss)$",
    re.IGNORECASE,
)
# Methods that keep a tensor's dtype: an autocast output passed through them is still low precision.
KEEP_DTYPE = {"view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "contiguous",
              "clone", "detach", "narrow", "select", "chunk", "split", "expand"}


class LossOutsideAutocast(Rule):
    """## What it does
    Flags a loss computed, right after an autocast block, on values the block's forward pass
    produced: `with autocast(): logits = model(x)` followed by `loss = criterion(logits, y)`.
    A loss on `logits.float()` is not flagged. Also across functions of the file: a function that
    returns its autocast block's forward output (`return self.model(x)` inside the block) and a
    caller that computes the loss on it, outside autocast, right after the call.

    ## Why is this bad?
    Autocast runs loss functions in float32 only inside the region (CUDA's fp32 list holds
    `cross_entropy`, `nll_loss`, `mse_loss`, `softmax`, ...). Outside it the loss gets the
    region's fp16/bf16 outputs and computes in low precision: softmax and log-sums lose digits or
    overflow. The autocast docs ask for the forward pass *including the loss* inside the region.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        logits = model(x)
    loss = F.cross_entropy(logits, y)
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    ```

    Low confidence (not shown at the default `--min-confidence medium`) for a loss computed
    under `torch.no_grad()`/`torch.inference_mode()` (a decorated `validate`): an evaluation
    metric, whose value is rounded but sends no gradient back.

    ## Fix safety
    No fix: moving statements changes which code runs under autocast.
    """

    code = "DTL205"
    name = "loss-outside-autocast"
    summary = "Loss computed on autocast outputs outside the autocast region"
    queries = (
        "the autocast `with` blocks of a function and the calls right after them (facts/training.py, facts/amp.py)",
        "the dtype flow: whether the loss's inputs were produced inside the region (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "which of the file's functions a call runs (facts/callees.py)",
        "whether the loss function upcasts its inputs itself (facts/safe_context.py)",
        "whether the loss runs under `torch.no_grad()`/`inference_mode()`, an evaluation metric (facts/safe_context.py)",
    )
    # An autocast region: each autocast name (and ``accelerator.autocast``) ends in the word "autocast".
    triggers = (exact_word("autocast"),)
    valid = (
        "import torch\nimport torch.nn.functional as F\nwith torch.autocast('cuda'):\n    logits = model(x)\n    loss = F.cross_entropy(logits, y)\n",
        "import torch\nwith torch.autocast('cuda'):\n    logits = model(x)\nloss = criterion(logits.float(), y)\n",
        "import torch\nwith torch.autocast('cuda', enabled=False):\n    logits = model(x)\nloss = criterion(logits, y)\n",
    )
    invalid = (
        Invalid("import torch\nimport torch.nn.functional as F\nwith torch.autocast('cuda', dtype=torch.float16):\n    logits = model(x)\nloss = F.cross_entropy(logits.view(-1, V), y.view(-1))\n"),
        Invalid("import torch\nfrom torch.cuda.amp import autocast\nwith autocast():\n    out = net(images)\nloss = self.loss_fn(out, labels)\n"),
        Invalid(
            "import torch\nimport torch.nn.functional as F\ndef forward_step(model, x):\n"
            "    with torch.autocast('cuda', dtype=torch.float16):\n        return model(x)\n"
            "def train_step(model, x, y):\n    logits = forward_step(model, x)\n    loss = F.cross_entropy(logits, y)\n"
        ),
    )

    def visit_With(self, node: cst.With) -> None:
        facts = training_facts(self.ctx)
        info = facts.autocast_of_with(node)
        if info is None or info.enabled is False:
            return
        produced = self._forward_outputs(node)
        if not produced:
            return
        parent = self.ctx.parent(node)
        body = getattr(parent, "body", None)
        if not isinstance(body, (list, tuple)) or node not in body:
            return
        dtypes, source = facts.autocast_dtypes(info)
        low = sorted(dtypes & {"float16", "bfloat16"})
        if dtypes and not low:
            return
        dtype_text = " or ".join(low) if low else "low precision"
        following = list(body[body.index(node) + 1:body.index(node) + 4])
        for statement in following:
            for call in calls_in(statement):
                if is_backward(call):
                    return
                if not LOSS_FUNCTIONS.search(call_name(call)) or call_name(call) == "backward":
                    continue
                used = self._uses(call, produced)
                if used is None:
                    continue
                if loss_upcasts_inputs(self.ctx, call):
                    return  # ``def loss_fn(logits, y): return F.cross_entropy(logits.float(), y)``
                self.report(
                    call,
                    f"`{used}` comes out of the autocast block at line {_line(self.ctx, node)} in {dtype_text}"
                    f" ({source}) and the loss is computed on it outside the block, without autocast's float32"
                    " loss kernels; compute the loss inside the block (or on `.float()` outputs)",
                    confidence=Confidence.MEDIUM,
                )
                return
            derived = self._derived_assignment(statement, produced)
            if derived:
                produced = produced | derived  # ``shift_logits = lm_logits[..., :-1, :].contiguous()``
            elif self._reassigns(statement, produced):
                return

    def visit_Module(self, node: cst.Module) -> None:
        """The forward under autocast in one function of this file, the loss on what it returns in
        its caller: ``logits = self.forward_step(x)`` then ``F.cross_entropy(logits, y)``."""
        from dtype_lint.facts.callees import FunctionIndex

        facts = training_facts(self.ctx)
        returning = {}
        for definitions in facts.functions.values():
            for function in definitions:
                found = self._returns_autocast_output(facts, function)
                if found is not None:
                    returning[function] = found
        if not returning:
            return
        index = FunctionIndex(self.ctx.module, self.ctx.names)
        for call in facts.calls:
            callee = index.resolve(call)
            if callee not in returning or any(info.enabled is not False for _, info in facts.enclosing_autocasts(call)):
                continue
            assign = self.ctx.parent(call)
            if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
                    and isinstance(assign.targets[0].target, cst.Name)):
                continue
            statement = self.ctx.parent(assign)
            block = self.ctx.parent(statement) if statement is not None else None
            body = getattr(block, "body", None)
            if not isinstance(body, (list, tuple)) or statement not in body:
                continue
            region, dtype_text, source = returning[callee]
            produced = {assign.targets[0].target.value}
            for following in body[body.index(statement) + 1:body.index(statement) + 4]:
                loss = self._loss_on(following, produced)
                if loss is not None:
                    self.report(
                        loss[0],
                        f"`{loss[1]}` is what `{callee.name.value}` returns from its autocast block (line"
                        f" {_line(self.ctx, region)}, {dtype_text}, {source}) and the loss is computed on it here,"
                        " outside any autocast, without autocast's float32 loss kernels; compute the loss inside"
                        " the region (or on `.float()` outputs)",
                        confidence=Confidence.MEDIUM,
                    )
                    break
                if loss is None and any(is_backward(c) for c in calls_in(following)):
                    break
                derived = self._derived_assignment(following, produced)
                if derived:
                    produced = produced | derived
                elif self._reassigns(following, produced):
                    break

    def report(self, node, message, **kwargs) -> None:
        reported = self.__dict__.setdefault("_reported", set())
        if id(node) not in reported:
            reported.add(id(node))
            if without_grad(self.ctx, node):
                # a validation loss under no_grad is a logged metric: no gradient flows from it,
                # and cross-entropy's float16 value is only rounded (Swin-Transformer's validate)
                kwargs["confidence"] = Confidence.LOW
                message += " (under no_grad: a logged metric, its value is rounded, no gradient flows from it)"
            super().report(node, message, **kwargs)

    def visit_Call(self, node: cst.Call) -> None:
        """What the dtype flow followed: a loss, outside any autocast region, on a tensor an
        enabled autocast region produced in low precision, wherever it was computed (the forward
        of a wrapper module that opens the region, a helper's return, a later statement)."""
        name = call_name(node)
        if not name or not LOSS_FUNCTIONS.search(name) or name == "backward" or id(node) in self.__dict__.get("_reported", ()):
            return
        flow = self.ctx.flow
        if flow.autocast_at(node) is not None:
            return
        for arg in node.args:
            value = flow.value_of(arg.value)
            if value is None or value.kind != "tensor" or value.autocast not in ("fp16", "bf16") \
                    or value.dtype != value.autocast:
                continue
            if loss_upcasts_inputs(self.ctx, node):
                return
            dtype_text = "float16" if value.autocast == "fp16" else "bfloat16"
            self.report(
                node,
                f"`{_short(self.ctx, arg.value)}` is {dtype_text} {value.since()}, computed under autocast, and the "
                f"loss is computed on it outside any autocast region, without autocast's float32 loss kernels; "
                f"compute the loss inside the region (or on `.float()` outputs)",
                confidence=Confidence.MEDIUM,
            )
            return

    def _loss_on(self, statement: cst.CSTNode, produced: set[str]):
        for call in calls_in(statement):
            if is_backward(call) or not LOSS_FUNCTIONS.search(call_name(call)):
                continue
            used = self._uses(call, produced)
            if used is not None:
                return call, used
        return None

    def _returns_autocast_output(self, facts, function: cst.FunctionDef):
        """``(with, dtype text, source)`` when ``function`` returns the forward output of a
        low-precision autocast block that computes no loss itself: ``return self.model(x)`` inside
        the block, or a name assigned in it returned right after."""
        for statement in function.body.body if isinstance(function.body, cst.IndentedBlock) else ():
            if not isinstance(statement, cst.With):
                continue
            info = facts.autocast_of_with(statement)
            if info is None or info.enabled is False:
                continue
            dtypes, source = facts.autocast_dtypes(info)
            low = sorted(dtypes & {"float16", "bfloat16"})
            if not low or any(LOSS_FUNCTIONS.search(call_name(c)) for c in calls_in(statement.body)):
                continue
            returned = [node for node in walk(statement.body) if isinstance(node, cst.Return) and node.value is not None]
            produced = self._forward_outputs(statement)
            body = function.body.body
            after = body[body.index(statement) + 1] if body.index(statement) + 1 < len(body) else None
            if after is not None and isinstance(after, cst.SimpleStatementLine) and isinstance(after.body[0], cst.Return):
                value = after.body[0].value
                if isinstance(value, cst.Name) and value.value in produced:
                    returned.append(after.body[0])
            if any(isinstance(r.value, (cst.Call, cst.Name)) for r in returned):
                return statement, " or ".join(low), source
        return None

    def _forward_outputs(self, node: cst.With) -> set[str]:
        """Names bound in the block to the result of a call (a forward pass)."""
        found: set[str] = set()
        for child in walk(node.body):
            if isinstance(child, cst.Assign) and isinstance(child.value, (cst.Call, cst.Subscript, cst.Attribute)):
                for target in child.targets:
                    if isinstance(target.target, cst.Tuple):
                        elements = [element.value for element in target.target.elements]
                    else:
                        elements = [target.target]
                    for value in elements:
                        if isinstance(value, cst.Name):
                            found.add(value.value)
        # A loss already computed inside means the region wraps the forward pass and its loss.
        for call in calls_in(node.body):
            if LOSS_FUNCTIONS.search(call_name(call)) and call_name(call) != "backward":
                return set()
        return found

    @staticmethod
    def _base(expr: cst.BaseExpression) -> cst.BaseExpression:
        """Down through dtype-keeping methods, attributes and subscripts to the base value."""
        while True:
            if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in KEEP_DTYPE:
                expr = expr.func.value
            elif isinstance(expr, (cst.Attribute, cst.Subscript)):
                expr = expr.value
            else:
                return expr

    def _uses(self, call: cst.Call, produced: set[str]) -> str | None:
        for arg in call.args:
            base = self._base(arg.value)
            if isinstance(base, cst.Name) and base.value in produced:
                return self.ctx.code_for(arg.value)
        return None

    def _derived_assignment(self, statement: cst.CSTNode, produced: set[str]) -> set[str]:
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return set()
        assign = statement.body[0]
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return set()
        target = assign.targets[0].target
        base = self._base(assign.value)
        if isinstance(target, cst.Name) and isinstance(base, cst.Name) and base.value in produced:
            return {target.value}
        return set()

    @staticmethod
    def _reassigns(statement: cst.CSTNode, produced: set[str]) -> bool:
        for child in walk(statement):
            if isinstance(child, cst.AssignTarget) and isinstance(child.target, cst.Name) and child.target.value in produced:
                return True
        return False


class NestedAutocastConflict(Rule):
    """## What it does
    Flags an autocast region opened inside another for the same device with a different dtype:
    `with autocast("cuda", dtype=torch.bfloat16)` inside `with autocast("cuda",
    dtype=torch.float16)`, also when the inner one is in a function or a module's `forward` called
    from the outer region. An inner `enabled=False` region (the documented way to force float32)
    is not a conflict. Also flags a module the dtype flow knows is bfloat16 (`.to(torch.bfloat16)`,
    `from_pretrained(dtype=torch.bfloat16)`) called inside a float16 autocast region.

    ## Why is this bad?
    Values computed in the outer region are fp16 and those of the inner one bf16; the ops that
    do not promote (index_put, scatter, in-place ops, `out=`) then fail with "expected scalar
    type", and the ops that do promote quietly run at float32 between them. One forward pass
    should have one autocast dtype. A bf16 model under fp16 autocast has its weights recast to
    fp16 on every matmul, so bf16-range values overflow to inf.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        h = encoder(x)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = decoder(h)
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        h = encoder(x)
        y = decoder(h)
    ```

    ## Fix safety
    No fix: which dtype the whole pass should use is the author's call.
    """

    code = "DTL206"
    name = "nested-autocast-conflict"
    summary = "Nested autocast regions with different dtypes"
    queries = (
        "the autocast regions around a node, their devices and dtypes, into the file's functions and `forward`s they call (facts/training.py, facts/amp.py)",
        "the dtype flow: a module's dtype where it is called (facts/dtypes.py, computed by facts/flow/interpreter.py)",
    )
    # An autocast region: each autocast name (and ``accelerator.autocast``) ends in the word "autocast".
    triggers = (exact_word("autocast"),)
    valid = (
        "import torch\nwith torch.autocast('cuda', dtype=torch.float16):\n    h = enc(x)\n    with torch.autocast('cuda', enabled=False):\n        y = head(h.float())\n",
        "import torch\nwith torch.autocast('cuda'):\n    with torch.autocast('cuda', dtype=torch.float16):\n        y = f(x)\n",
        "import torch\nwith torch.autocast('cuda', dtype=torch.float16):\n    with torch.autocast('cpu', dtype=torch.bfloat16):\n        y = f(x)\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom transformers import AutoModelForCausalLM\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2', dtype=torch.bfloat16)\n"
            "with torch.autocast('cuda', dtype=torch.float16):\n    out = model(input_ids)\n"
        ),
        Invalid(
            "import torch\nwith torch.autocast('cuda', dtype=torch.float16):\n    h = enc(x)\n"
            "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        y = dec(h)\n"
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Head(nn.Module):\n    def forward(self, x):\n"
            "        with torch.autocast('cuda', dtype=torch.bfloat16):\n            return self.proj(x)\n"
            "head = Head()\nwith torch.autocast('cuda'):\n    y = head(x)\n"
        ),
    )

    def visit_With(self, node: cst.With) -> None:
        facts = training_facts(self.ctx)
        info = facts.autocast_of_with(node)
        if info is None or info.enabled is False:
            return
        outer_dtypes, outer_source = facts.autocast_dtypes(info)
        if len(outer_dtypes) != 1:
            return
        enclosing = facts.enclosing_autocasts(node)
        if enclosing:
            outer_with, outer = enclosing[0]
            self._compare(facts, outer_with, outer, node, info, node)
        if outer_dtypes == {"float16"}:
            self._bf16_module_in_fp16_region(node, outer_source)
        for call in calls_in(node.body):
            for definition in self._callee_definitions(facts, call):
                for inner_with in walk(definition.body):
                    if not isinstance(inner_with, cst.With):
                        continue
                    inner = facts.autocast_of_with(inner_with)
                    if inner is not None and not facts.enclosing_autocasts(inner_with):
                        self._compare(facts, node, info, inner_with, inner, call)

    def _bf16_module_in_fp16_region(self, node: cst.With, source: str) -> None:
        """A module cast to bf16 called inside an fp16 region: bf16 weights meet fp16 activations."""
        for call in calls_in(node.body):
            value = self.ctx.flow.value_of(call.func)
            if value is None or value.kind != "module" or not value.certain or value.dtype != "bf16":
                continue
            self.report(
                call,
                f"`{self.ctx.code_for(call.func)}` is bfloat16 {value.since('bf16')} but runs inside the float16 autocast"
                f" at line {_line(self.ctx, node)} ({source}): its bf16 weights are recast to fp16 (values beyond 65504"
                " overflow) and ops autocast does not cover mix bf16 and fp16; autocast in bfloat16 instead",
                confidence=Confidence.MEDIUM,
            )
            return

    def _compare(self, facts, outer_with, outer: AutocastInfo, inner_with, inner: AutocastInfo, anchor) -> None:
        if outer.enabled is False or inner.enabled is False:
            return
        if outer.device is None or inner.device != outer.device:
            return
        outer_dtypes, outer_source = facts.autocast_dtypes(outer)
        inner_dtypes, inner_source = facts.autocast_dtypes(inner)
        if len(outer_dtypes) != 1 or len(inner_dtypes) != 1 or outer_dtypes == inner_dtypes:
            return
        both_on = outer.enabled is True and inner.enabled is True
        via = "" if anchor is inner_with else f" (called here; the inner region is at line {_line(self.ctx, inner_with)})"
        self.report(
            anchor,
            f"autocast in {next(iter(inner_dtypes))} ({inner_source}){via} runs inside the {next(iter(outer_dtypes))}"
            f" autocast at line {_line(self.ctx, outer_with)} ({outer_source}): one forward pass mixes fp16 and"
            " bf16 values; use one dtype (or `enabled=False` for a float32 island)",
            confidence=Confidence.MEDIUM if both_on else Confidence.LOW,
        )

    def _callee_definitions(self, facts, call: cst.Call) -> list[cst.FunctionDef]:
        """Local functions, ``self.`` methods, and the ``forward`` of local module classes a call runs."""
        func = call.func
        if isinstance(func, cst.Name):
            if func.value in facts.functions:
                return facts.functions[func.value]
            class_name = self._instance_class(facts, func.value)
            if class_name is not None:
                return [
                    d for d in facts.functions.get("forward", [])
                    if self.ctx.enclosing(d, cst.ClassDef) is facts.classes[class_name]
                ]
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            return facts.functions.get(func.attr.value, [])
        return []

    @staticmethod
    def _instance_class(facts, name: str) -> str | None:
        """``Head`` when every assignment of ``name`` in the file is ``Head(...)``, a class defined here."""
        bound = facts.assignments.get(name, [])
        classes = {
            value.func.value for _, value in bound if isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
        }
        if len(classes) == 1 and len(bound) == sum(1 for _, v in bound if isinstance(v, cst.Call)):
            class_name = next(iter(classes))
            return class_name if class_name in facts.classes else None
        return None


class Fp16AutocastWithoutScaler(Rule):
    """## What it does
    Flags a `backward()` in a training step (a loop body, or the function that calls backward)
    that runs a float16 autocast, explicit (`dtype=torch.float16`) or the CUDA default
    (`torch.autocast("cuda")`, `torch.cuda.amp.autocast()`), in a file with no loss scaler
    (`GradScaler`, timm's `NativeScaler`, apex `amp.scale_loss`). `accelerator.backward`,
    Fabric and DeepSpeed engines scale the loss themselves and are not flagged; bf16 needs no
    scaler. A region under `if mixed_precision:` on a parameter that every call of its function
    in the file binds to False (directly, or passing on a caller's parameter that its calls bind
    to False) never runs and is not counted. Nor is a backward outside any loop in a file where
    nothing steps an optimizer (no `opt.step()`, no optimizer at all): the gradients are only
    inspected, as in a test that checks a float16 backward runs (a backward in a loop is a
    training loop, whose step may be in another file); nor one in a speed benchmark (`bench.py`,
    `benchmark_*.py`, `*_bench.py`), whose steps are timed, not kept.

    ## Why is this bad?
    fp16 cannot represent gradients below about 6e-8: without loss scaling small gradients
    flush to zero and the model silently stops learning in those weights. GradScaler exists for
    exactly this; the AMP recipe is autocast *and* a scaler.

    ## Example
    ```python
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    No fix: adding a scaler rewrites the step (see DTL305 for the step itself).
    """

    code = "DTL208"
    name = "fp16-autocast-without-scaler"
    summary = "fp16 autocast training without a GradScaler"
    queries = (
        "the autocast regions around a backward and the dtypes they run at, and whether the file builds a loss scaler (facts/training.py, facts/amp.py)",
        "the dtype flow: whether a `backward()` receiver is a tensor, and whether the loss was produced under a bfloat16 autocast (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "whether any call of the file may apply gradients: an optimizer's step (facts/training.py `steps_an_optimizer`)",
        "whether the file is a speed benchmark, by its path (facts/deliberate.py `is_benchmark_file`)",
    )
    # An autocast region: each autocast name (and ``accelerator.autocast``) ends in the word "autocast".
    # A ``backward()`` call, and float16: a float16/half dtype literal or the CUDA default ("cuda").
    triggers = (exact_word("autocast"),)
    required_triggers = (
        (exact_word("backward"),),
        (exact_word("float16"), exact_word("half"), exact_word("cuda")),
    )
    valid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nfor x, y in loader:\n    with torch.autocast('cuda'):\n"
        "        loss = model(x, y)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
        "import torch\nfor x, y in loader:\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n        loss = model(x, y)\n    loss.backward()\n    opt.step()\n",
        "import torch\nfor x, y in loader:\n    with accelerator.autocast():\n        loss = model(x, y)\n    accelerator.backward(loss)\n",
    )
    invalid = (
        Invalid(
            "import torch\nfor x, y in loader:\n    with torch.autocast('cuda'):\n        loss = criterion(model(x), y)\n"
            "    loss.backward()\n    optimizer.step()\n"
        ),
        Invalid(
            "import torch\nfrom torch.cuda.amp import autocast\ndef train_step(model, batch, opt):\n    with autocast(dtype=torch.float16):\n"
            "        loss = model(**batch).loss\n    loss.backward()\n    opt.step()\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        facts = training_facts(self.ctx)
        if facts.uses_scaler or self.ctx.names.is_imported("deepspeed") or self.ctx.names.is_imported("apex"):
            return
        for call in facts.calls:
            if not is_backward(call) or is_scaled_backward(call) or self._delegated(call) or self._made_in_bf16(call):
                continue
            found = self._fp16_autocast_for(facts, call)
            if found is None:
                continue
            info, source, confidence = found
            once_outside_a_loop = self.ctx.enclosing(call, cst.For, cst.While) is None
            if (once_outside_a_loop and not steps_an_optimizer(facts.calls)) or is_benchmark_file(self.ctx.path):
                # nothing in the file applies the gradients of a single backward (diffusers'
                # mixed-precision test only checks that backward runs), or a speed benchmark times
                # the steps (nanoGPT's bench.py): flushed gradients change nothing the file keeps
                # or reports. A backward in a loop is a training loop whose step may live elsewhere.
                confidence = Confidence.LOW
            self.report(
                call,
                f"`{self.ctx.code_for(call)}` follows a float16 autocast ({_describe_autocast(self.ctx, info)}, {source})"
                " and no GradScaler scales the loss in this file: fp16 gradients below ~6e-8 flush to zero;"
                " use `torch.amp.GradScaler`",
                confidence=confidence,
            )

    def _delegated(self, call: cst.Call) -> bool:
        """``optimizer.backward(loss)``: a wrapper given the loss runs the backward itself and may
        scale it (fairseq's AMPOptimizer, a trainer's ``backward``): whether it does is unknown.
        ``loss.backward(...)`` and ``torch.autograd.backward(loss)`` scale nothing."""
        if not any(a.keyword is None and not a.star for a in call.args) or not isinstance(call.func, cst.Attribute):
            return False
        if self.ctx.names.matches(call.func, "torch.autograd.backward"):
            return False
        owner = self.ctx.flow.value_of(call.func.value)
        return owner is None or owner.kind != "tensor"

    def _made_in_bf16(self, call: cst.Call) -> bool:
        """The loss was computed in a bfloat16 autocast region (whatever other regions the
        function runs): its backward needs no scaler."""
        loss = receiver(call) if positional(call, 0) is None else positional(call, 0)
        value = self.ctx.flow.value_of(loss) if loss is not None else None
        return value is not None and value.kind == "tensor" and value.autocast == "bf16"

    def _fp16_autocast_for(self, facts, backward: cst.Call):
        candidates: list[AutocastInfo] = [info for _, info in facts.enclosing_autocasts(backward)]
        scope = facts.enclosing_loop(backward) or self.ctx.enclosing(backward, cst.FunctionDef)
        if scope is not None:
            loop = scope
            start = self.ctx.source_order(backward)[0]
            before: list[AutocastInfo] = []  # the regions that end before the backward, in order
            for with_node in walk(scope):
                if isinstance(with_node, cst.With):
                    info = facts.autocast_of_with(with_node)
                    if info is not None:
                        (before if self.ctx.source_order(with_node)[1] < start else candidates).append(info)
            # the loss comes from the nearest region before its backward (a function may run a
            # float16 region, then a bfloat16 one); in a loop the last region may feed the next pass
            candidates.extend(before[-1:] if facts.enclosing_loop(backward) is None else reversed(before))
            for definition in facts.local_callees(loop):
                # the calls made here bind the callee's flags (``loss_step(..., mixed_precision=False)``)
                here = [c for c in calls_in(loop) if flag_logic.callee_name(c) == definition.name.value]
                for with_node in walk(definition.body):
                    if isinstance(with_node, cst.With):
                        info = facts.autocast_of_with(with_node)
                        if info is not None and not flag_logic.branch_never_taken(self.ctx, with_node, here):
                            candidates.append(info)
            candidates.extend(info for _, info in facts.enclosing_autocasts(scope))
        for info in candidates:
            if info.enabled is False or info.node is None:
                continue
            if flag_logic.branch_never_taken(self.ctx, info.node):
                continue  # ``if mixed_precision:`` on a parameter every call of the function passes False
            dtypes, source = facts.autocast_dtypes(info)
            if "float16" not in dtypes:
                continue
            certain = dtypes == {"float16"} and info.enabled is True
            return info, source, Confidence.HIGH if certain else Confidence.MEDIUM
        return None


def _short(ctx, node: cst.CSTNode, limit: int = 40) -> str:
    text = " ".join(ctx.code_for(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."

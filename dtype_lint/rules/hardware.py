"""Precision the hardware cannot run: DTL709 fp16-on-cpu (a float16 model run on the CPU).

bf16 on a pre-Ampere GPU is DTL203 (rules/autocast_dtype.py); the device facts are in
facts/devices.py.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from dtype_lint.facts import devices, flag_logic, user_choice
from dtype_lint.facts.amp import literal_bool, literal_string
from dtype_lint.facts.flow.library import FP16_TRIGGERS
from dtype_lint.facts.flow.values import FP16, Value
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, keyword, positional, training_facts, walk
from dtype_lint.findings import Confidence
from dtype_lint.facts.flow.checkpoint_loads import CheckpointOrigin
from dtype_lint.rules.base import Invalid, Rule

# Methods that run a model (besides calling it): inference entry points of HF, YOLO, GLM, whisper...
RUN_METHODS = frozenset({
    "generate", "chat", "stream_chat", "predict", "forward", "sample", "encode", "decode", "infer",
    "inference", "detect", "transcribe",
})
# A condition or dtype choice that looks at the device: the fp16 is meant for the GPU only.
DEVICE_AWARE = re.compile(r"cuda|cpu|device|gpu|mps|is_available|is_bf16_supported", re.IGNORECASE)
# A file that never names a GPU (nor a framework that places models) runs its models on the CPU.
PLACES_ON_GPU = re.compile(r"cuda|device|gpu|accelerat|deepspeed|xla|mps|npu|tpu|lightning", re.IGNORECASE)
STOPS = (cst.Raise,)
GPU_ONLY_DECORATOR = re.compile(r"gpu|cuda|non_cpu|accelerator|is_available", re.IGNORECASE)
EXIT_CALLS = frozenset({"exit", "quit", "_exit"})


@dataclasses.dataclass(frozen=True)
class Fp16Request:
    """A library model that runs in float16 when a keyword asks for it, on the device it was
    loaded on: ``loader(..., device=...)`` makes the model; ``methods`` of it (or the loader
    itself, when ``methods`` is empty) take ``keyword``, whose ``value`` asks for float16."""

    loader: str
    device: str  # the loader's device keyword
    methods: frozenset
    keyword: str
    value: object
    on_cpu: str  # what the library does then, for the message


# Library contracts (their docs and sources): openai-whisper's transcribe/decode warn "FP16 is
# not supported on CPU; using FP32 instead" (Uberi/speech_recognition#629); faster-whisper's
# compute_type="float16" raises on a CPU device ("Requested float16 compute type, but the
# target device or backend do not support efficient float16 computation").
FP16_REQUESTS = (
    Fp16Request("whisper.load_model", "device", frozenset({"transcribe", "decode"}), "fp16", True,
                "whisper warns \"FP16 is not supported on CPU; using FP32 instead\""),
    Fp16Request("faster_whisper.WhisperModel", "device", frozenset(), "compute_type", "float16",
                "faster-whisper raises \"Requested float16 compute type, but the target device or backend do not"
                " support efficient float16 computation\""),
)


class Fp16OnCpu(Rule):
    """## What it does
    Flags a model cast to float16 (`.half()`, `.to(torch.float16)`, `from_pretrained(dtype=
    torch.float16)`, a helper that halves it) that then runs on the CPU on some path: it is moved
    to a device that may be `"cpu"` (`"cuda" if torch.cuda.is_available() else "cpu"`, a
    `device="cpu"` default, an argparse `--device` defaulting to `cpu`, `.cpu()`), or it is run by a
    script (an `if __name__ == "__main__":` entry point) that never places anything on a GPU. A float16 cast whose condition or dtype choice looks
    at the device (`half &= device.type != "cpu"`, `torch.float16 if device == "cuda" else
    torch.float32`) is not flagged; bfloat16 is not either (CPUs run it natively). Libraries
    that take float16 as a keyword are flagged where they are asked for it on a model loaded on
    a device that may be the CPU: openai-whisper's `model.transcribe(audio, fp16=True)` after
    `whisper.load_model(name, device=device)` (it warns and falls back to float32) and
    faster-whisper's `WhisperModel(name, device=..., compute_type="float16")` (it raises). In a project
    check, a module loaded from a checkpoint the project saves in float16
    (`torch.load(p)["model"]` after `torch.save({"model": deepcopy(model).half()}, p)` in another
    file) counts as cast where it is loaded (medium: the load matches the save by key).
    `torch.load(f, map_location=device)` places what it loads on `device`, and a device helper of
    the file (YOLOv5's `select_device`: `cpu` without CUDA, `cuda:N` otherwise) names the devices
    its returns name; a model loaded float16 and then halved again under a device check is
    reported at the load, the cast that does not look at the device. A float16 the user opts into
    (`if args.fp16: dtype = torch.float16` with `--fp16` a `store_true` flag, a `half=False`
    parameter) on a device whose CPU is only the fallback of `"cuda" if
    torch.cuda.is_available() else "cpu"` is the user's choice and is not flagged; the same flag
    with a `--device` that defaults to `cpu` is. The fallback may be written as a statement: the
    CPU assigned in the `else` of a test that needs CUDA and no opt-in switch (`use_cuda =
    torch.cuda.is_available() and not args.cpu`; `if use_cuda: ... else: device = "cpu"`, also
    on `self.device`): `--fp16` with `--cpu` is the user's combination. A switch of a config the
    file does not define (`cfg.common.fp16`, Latte's YAML `use_fp16: True`) is not an opt-in.

    ## Why is this bad?
    CPUs have no float16 matmul or convolution kernels. torch 1.12 to 2.1 raise
    `"addmm_impl_cpu_" not implemented for 'Half'` / `"slow_conv2d_cpu" not implemented for 'Half'`
    (huggingface/transformers#27769, ultralytics/yolov5#10379, open-mmlab/mmdetection#2951), and
    newer versions emulate them several times slower than float32 (a 512x512 matmul: about 7x on
    torch 2.13). The `--half` or fp16 default was written for a GPU and bites whoever runs the
    script without one.

    ## Example
    ```python
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float16).to(device)
    ```

    ## Use instead
    ```python
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.float16 if device == "cuda" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype).to(device)
    ```

    ## Fix safety
    No fix: which dtype the CPU path should use (float32, or bfloat16 on CPUs that have it) is the
    author's choice. High confidence when the model is float16 on every path and moved to `"cpu"`;
    medium when the CPU is one reachable configuration or the file never places the model.
    """

    code = "DTL709"
    name = "fp16-on-cpu"
    summary = "float16 model run on the CPU (no native float16 kernels there)"
    queries = (
        "the dtype flow: the dtype of the model that runs, and where it came from, a checkpoint of the project included (facts/dtypes.py, computed by facts/flow/interpreter.py; project/checkpoints.py)",
        "the devices a device expression may name and where the model is placed, and whether the CPU is only the no-CUDA fallback or a switch the user turns on (facts/devices.py)",
        "whether the float16 is the user's opt-in choice: a flag of the file off unless asked (facts/user_choice.py)",
        "the one expression a name is bound to, for the model a library loaded (facts/flag_logic.py `binding`)",
        "the file's calls, assignments and words (facts/training.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    triggers = FP16_TRIGGERS
    valid = (
        "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "dtype = torch.float16 if device == 'cuda' else torch.float32\n"
        "model = AutoModel.from_pretrained('m', dtype=dtype).to(device)\nmodel.generate(ids)\n",
        "import torch\nmodel = torch.nn.Linear(4, 4).half().cuda()\nmodel(torch.randn(2, 4).cuda().half())\n",
        "import torch\ndef run(model, x, device='cpu', half=False):\n    half &= device != 'cpu'\n"
        "    model.to(device)\n    if half:\n        model.half()\n    return model(x)\n",
        "import torch\nmodel = torch.nn.Linear(4, 4).to(torch.bfloat16)\nmodel(torch.randn(2, 4, dtype=torch.bfloat16))\n",
    )
    invalid = (
        Invalid(
            "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "model = AutoModel.from_pretrained('m', dtype=torch.float16)\nmodel.to(device)\nmodel.generate(ids)\n"
        ),
        Invalid(
            "import torch\ndef main():\n    model = torch.hub.load('ultralytics/yolov5', 'yolov5s')\n    model.half()\n"
            "    model(frame)\nif __name__ == '__main__':\n    main()\n"
        ),
        Invalid(
            "import torch\ndef run(model, x, device='cpu', half=False):\n    model.to(device)\n"
            "    if half:\n        model.half()\n    return model(x)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._stops: bool | None = None  # _stops_without_gpu, once known
        self._library_requests()
        reported: set[cst.CSTNode] = set()
        for call in training_facts(self.ctx).calls:
            use = self._fp16_use(call)
            if use is None:
                continue
            module_node, module, running = use
            key = dotted_name(module_node)
            if key is None and devices.MOVES & {call_name(call)}:
                # ``model = (ckpt.get("ema") or ckpt["model"]).to(device)``: the name it is moved into
                key = devices.assigned_to(self.ctx, call)
            if key is None:
                continue
            scope = devices.scope_of(self.ctx, call)
            # the first place it became float16 that does not look at the device (a model loaded
            # float16 from a checkpoint, then halved again under ``if half:``: the load)
            cast = next((c for c in self._cast_sites(module, key, scope, call) if not self._device_aware(c, scope)), None)
            if cast is None or cast in reported or self._stops_without_gpu():
                continue
            placed = devices.placements(self.ctx, key, scope)
            if placed is None:
                if not running or self._names_a_gpu() or "__main__" not in self.ctx.text:
                    # Only an entry point is known to run where it stands: an importer may place
                    # a library's model on a GPU.
                    continue
                where = "on the CPU (nothing in this file places it on a GPU)"
                confidence = Confidence.MEDIUM
            elif devices.CPU in placed:
                if placed != {devices.CPU} and user_choice.low_precision_chosen(self.ctx, cast) \
                        and devices.cpu_only_as_fallback(self.ctx, key, scope):
                    continue  # ``--fp16`` asked for on a machine whose CPU is only the no-CUDA fallback
                where = "on the CPU" if placed == {devices.CPU} else "on the CPU on some paths (its device may be `\"cpu\"`)"
                certain = placed == {devices.CPU} and module.only(FP16) and module.certain
                confidence = Confidence.HIGH if certain else Confidence.MEDIUM
            else:
                continue
            if self._gpu_only_scope(call):
                continue
            reported.add(cast)
            origin = module.origin_of(FP16)
            how = "is cast to float16 here"
            if isinstance(origin, CheckpointOrigin) and origin.node is cast:
                how = f"is loaded float16 here, from {origin.describe()},"  # a project save decided it
            self.report(
                cast,
                f"`{key}` {how} and runs {where}: CPUs have no float16 matmul/conv"
                " kernels (torch 1.12-2.1 raise `\"addmm_impl_cpu_\" not implemented for 'Half'`, newer"
                " versions run several times slower than float32); use float16 only on CUDA"
                " (`torch.float16 if device.type == \"cuda\" else torch.float32`)",
                confidence=confidence,
            )

    def _library_requests(self) -> None:
        """``model.transcribe(audio, fp16=True)`` on ``whisper.load_model(name, device=device)``
        with a device that may be "cpu" (FP16_REQUESTS); a request whose value looks at the device
        (``fp16=torch.cuda.is_available()``) is not a literal and is not flagged."""
        for call in training_facts(self.ctx).calls:
            for request in FP16_REQUESTS:
                loader = self._loader_of(call, request)
                if loader is None:
                    continue
                asked = keyword(call, request.keyword)
                if asked is None or _literal(asked) != request.value:
                    continue
                scope = devices.scope_of(self.ctx, loader)
                device = keyword(loader, request.device)
                if device is None or devices.CPU not in devices.device_choices(self.ctx, device, scope):
                    continue
                self.report(
                    asked,
                    f"`{request.keyword}={self.ctx.code_for(asked)}` asks for float16, but the model is loaded on"
                    f" `{self.ctx.code_for(device)}` (line {self.ctx.position(loader).start.line}), which may be the CPU:"
                    f" {request.on_cpu}; ask for it on CUDA only (`{request.keyword}=torch.cuda.is_available()`)",
                    confidence=Confidence.MEDIUM,
                )

    def _loader_of(self, call: cst.Call, request: Fp16Request) -> cst.Call | None:
        """The loader call that made the model ``call`` uses: the call itself (a constructor that
        takes the keyword), or the one assigned to the receiver of ``receiver.method(...)``."""
        if not request.methods:
            return call if self.ctx.names.matches(call.func, request.loader) else None
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value in request.methods):
            return None
        receiver = call.func.value
        bound = flag_logic.binding(self.ctx, receiver) if isinstance(receiver, cst.Name) else None
        if isinstance(bound, cst.Call) and self.ctx.names.matches(bound.func, request.loader):
            return bound
        return None

    def _fp16_use(self, call: cst.Call) -> tuple[cst.BaseExpression, Value, bool] | None:
        """``(model expression, its value, runs it)`` when ``call`` runs or moves a module that
        may be float16."""
        flow = self.ctx.flow
        candidates = [(call.func, True)]
        if isinstance(call.func, cst.Attribute):
            method = call.func.attr.value
            if method in RUN_METHODS:
                candidates.append((call.func.value, True))
            elif method in devices.MOVES:
                candidates.append((call.func.value, False))
        for node, running in candidates:
            value = flow.value_of(node)
            if value is not None and value.kind == "module" and FP16 in value.dtypes and value.role != "quantized":
                return node, value, running
        return None

    def _cast_sites(self, module: Value, key: str, scope: cst.CSTNode, use: cst.Call) -> list[cst.CSTNode]:
        """Where ``key`` became float16, in the scope of its use: the flow's origins, or the call
        of this scope that handed it to a helper that halved it (``wrap_fp16_model(model)``)."""
        origins = [o.node for dtype, o in module.origins if dtype == FP16]
        inside = [o for o in origins if o is not None and devices.in_scope(self.ctx, o, scope)]
        if inside:
            return inside
        found = self._handed_to_helper(key, scope, use)
        return [found] if found is not None else []

    def _handed_to_helper(self, key: str, scope: cst.CSTNode, use: cst.Call) -> cst.CSTNode | None:
        use_start = self.ctx.source_order(use)[0]
        for call in training_facts(self.ctx).calls:
            if self.ctx.source_order(call)[0] >= use_start or not devices.in_scope(self.ctx, call, scope):
                continue
            related = devices.chain_root(call) == key or any(dotted_name(a.value) == key for a in call.args)
            value = self.ctx.flow.value_of(call)
            if related and value is not None and value.kind == "module" and FP16 in value.dtypes \
                    and not self._already_fp16(call, key):
                return call
        return None

    def _already_fp16(self, call: cst.Call, key: str) -> bool:
        """The model was already float16 when ``call`` got it (``model.train()`` after an
        evaluation helper halved it): the call is not where it became float16."""
        handed = [call.func.value] if isinstance(call.func, cst.Attribute) else []
        handed += [a.value for a in call.args if dotted_name(a.value) == key]
        for node in handed:
            value = self.ctx.flow.value_of(node)
            if value is not None and FP16 in value.dtypes:
                return True
        return False

    def _device_aware(self, cast: cst.CSTNode, scope: cst.CSTNode) -> bool:
        """The cast happens under a condition, or with a dtype chosen by one, that looks at the
        device (one assignment deep: ``half &= device.type != "cpu"`` then ``if half:``)."""
        expressions: list[cst.BaseExpression] = []
        current = self.ctx.parent(cast)
        while current is not None and current is not scope:
            if isinstance(current, (cst.If, cst.IfExp, cst.While)):
                expressions.append(current.test)
            current = self.ctx.parent(current)
        if isinstance(cast, cst.Call):
            for argument in (keyword(cast, "torch_dtype"), keyword(cast, "dtype"), positional(cast, 0)):
                if argument is not None and call_name(cast) in ("to", "from_pretrained"):
                    expressions.append(argument)
        if self._asserted_off_cpu(cast, scope, expressions):
            return True
        assignments = training_facts(self.ctx).assignments
        augmented = self._augmented()
        for expression in list(expressions):
            for node in walk(expression):
                name = dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
                if name is None:
                    continue
                expressions.extend(value for _, value in assignments.get(name, []))
                expressions.extend(augmented.get(name, []))
        return any(DEVICE_AWARE.search(self.ctx.code_for(e)) for e in expressions)

    def _asserted_off_cpu(self, cast: cst.CSTNode, scope: cst.CSTNode, conditions: list) -> bool:
        """An ``assert`` on the device runs before the cast, on every path of the scope or under a
        condition that shares a name with the cast's (YOLOv5's export: ``if half: assert
        device.type != "cpu" or coreml``, then ``if half and not coreml: model.half()``)."""
        names = {dotted_name(n) for c in conditions for n in walk(c) if isinstance(n, (cst.Name, cst.Attribute))} - {None}
        start = self.ctx.source_order(cast)[0]
        for node in walk(scope):
            if type(node) is not cst.Assert or self.ctx.source_order(node)[1] >= start \
                    or not DEVICE_AWARE.search(self.ctx.code_for(node.test)):
                continue
            guard = self.ctx.parent(node)
            while guard is not None and guard is not scope and not isinstance(guard, (cst.If, cst.For, cst.While, cst.Try)):
                guard = self.ctx.parent(guard)
            if guard is None or guard is scope:
                return True
            if isinstance(guard, cst.If) and names & {dotted_name(n) for n in walk(guard.test)
                                                        if isinstance(n, (cst.Name, cst.Attribute))}:
                return True
        return False

    def _augmented(self) -> dict[str, list[cst.BaseExpression]]:
        found: dict[str, list[cst.BaseExpression]] = {}
        for node in self.ctx.all_nodes:
            if type(node) is cst.AugAssign:
                name = dotted_name(node.target)
                if name is not None:
                    found.setdefault(name, []).append(node.value)
        return found

    def _names_a_gpu(self) -> bool:
        """Some identifier or string of the code (not a comment) names a GPU or a placing framework."""
        words = training_facts(self.ctx).identifiers
        strings = (n.value for n in self.ctx.all_nodes if type(n) is cst.SimpleString)
        return any(PLACES_ON_GPU.search(w) for w in words) or any(PLACES_ON_GPU.search(s) for s in strings)

    def _gpu_only_scope(self, node: cst.CSTNode) -> bool:
        """A function or class decorated as GPU-only (``@require_torch_gpu``, ``@require_non_cpu``,
        ``@pytest.mark.skipif(not torch.cuda.is_available(), ...)``)."""
        current = self.ctx.enclosing(node, cst.FunctionDef, cst.ClassDef)
        while current is not None:
            if any(GPU_ONLY_DECORATOR.search(self.ctx.code_for(d.decorator)) for d in current.decorators):
                return True
            current = self.ctx.enclosing(current, cst.FunctionDef, cst.ClassDef)
        return False

    def _stops_without_gpu(self) -> bool:
        """The program refuses to run without CUDA (``assert torch.cuda.is_available()``, or an
        ``if not torch.cuda.is_available():`` that raises or exits). A fact of the whole file,
        asked for each candidate cast: read once."""
        if self._stops is None:
            # no test can name ``is_available`` unless the text does (code_for is the file's text)
            self._stops = "is_available" in self.ctx.text and self._reads_stop_without_gpu()
        return self._stops

    def _reads_stop_without_gpu(self) -> bool:
        for node in self.ctx.all_nodes:
            if type(node) is cst.Assert and "is_available" in self.ctx.code_for(node.test):
                return True
            if type(node) is cst.If and "is_available" in self.ctx.code_for(node.test):
                for inner in walk(node.body):
                    if isinstance(inner, STOPS) or (isinstance(inner, cst.Call) and call_name(inner) in EXIT_CALLS):
                        return True
        return False


def _literal(node: cst.BaseExpression):
    flag = literal_bool(node)
    return flag if flag is not None else literal_string(node)

"""Process-wide switches set by a training script: TF32 (DTL701), the default dtype (DTL702) and
anomaly mode (DTL705). They need names, not dtype flow: each is one call or assignment, judged by
where it sits (module level, a function, a debug-only branch)."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.amp import dtype_literal, literal_bool, literal_string
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import calls_in, child_nodes, is_backward, training_facts
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.migration import TORCH_FP32_PRECISION

SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _indent_of(ctx, node: cst.CSTNode) -> str:
    return re.match(r"[ \t]*", ctx.lines[ctx.position(node).start.line - 1]).group(0)


def _lone_small_statement(ctx, node: cst.CSTNode) -> bool:
    """``node`` is the only small statement of its line (so it may become several lines)."""
    statement = ctx.parent(node)
    if isinstance(node, cst.Call):
        statement = ctx.parent(statement) if isinstance(statement, cst.Expr) and statement.value is node else None
        node = ctx.parent(node)
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and statement.body[0] is node


# -- DTL701 ------------------------------------------------------------------------------------
LEGACY_TF32 = {
    "torch.backends.cuda.matmul.allow_tf32": ("matmul",),
    "torch.backends.cudnn.allow_tf32": ("conv", "rnn"),
}


class Tf32LegacyFlags(Rule):
    """## What it does
    Flags assignments to the legacy TF32 switches `torch.backends.cuda.matmul.allow_tf32` and
    `torch.backends.cudnn.allow_tf32`, however `torch` was imported.

    ## Why is this bad?
    Since torch 2.9 TF32 is controlled by `fp32_precision` (`"tf32"` or `"ieee"`) per backend and
    operator; the `allow_tf32` flags are slated for deprecation. Worse, the two APIs do not mix: once
    any `fp32_precision` is set, reading a legacy flag that disagrees with it raises "...you have
    used mix of the legacy and new APIs to set the TF32 status..." (checked on 2.13). And TF32 itself keeps only 10 mantissa bits in matmuls
    and convolutions: a precision decision that deserves one explicit spelling.

    ## Example
    ```python
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    ```

    ## Use instead
    ```python
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    torch.backends.cudnn.conv.fp32_precision = "tf32"
    torch.backends.cudnn.rnn.fp32_precision = "tf32"
    ```

    Reported only where the project can move: its oldest supported torch (`target-torch`, read
    from its dependencies) is 2.9 or later. The legacy flags work on every torch and do not warn
    (checked on 2.13), so a project on an older or an undeclared torch is told nothing, unless the
    same file also sets a `torch.backends...fp32_precision`: then a legacy read raises.

    ## Fix safety
    Safe: `allow_tf32 = True` / `False` becomes `fp32_precision = "tf32"` / `"ieee"` (cuDNN's flag
    covers convolutions and RNNs, so it becomes two lines), the documented equivalent on torch >= 2.9
    (checked on 2.13: the new settings read back as set, and a legacy read afterwards raises).
    Offered only when the project's oldest torch is 2.9 or later, only for literal `True`/`False` on a line of its own, and only when every mention of
    `allow_tf32` in the file is such an assignment: a legacy read left behind would raise.
    """

    code = "DTL701"
    name = "tf32-legacy-flags"
    summary = "Legacy `allow_tf32` TF32 switch"
    queries = (
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "the oldest torch the project supports (`target-torch`, config.py, read from its dependency declarations by targets.py)",
    )
    fix_safety = Safety.SAFE
    # Only assignments to an attribute named ``allow_tf32`` are findings.
    triggers = (exact_word("allow_tf32"),)
    valid = (
        'import torch\ntorch.backends.cuda.matmul.fp32_precision = "tf32"\n',
        "import torch\ntorch.set_float32_matmul_precision('high')\n",
        "import torch\nprint(torch.backends.cuda.matmul.allow_tf32)\n",
        "config = {}\nconfig.allow_tf32 = True\n",
        # A project that has not declared torch >= 2.9 cannot move; nothing warns today.
        "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
        # detectron2: a local variable named fp32_precision is not torch's setting.
        "import torch\ntorch.backends.cudnn.allow_tf32 = True\nfp32_precision = cfg.get('fp32_precision')\n",
    )
    invalid = (
        Invalid(
            "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True  # faster matmuls\n",
            fixed='import torch\ntorch.backends.cuda.matmul.fp32_precision = "tf32"  # faster matmuls\n',
            targets=(("target_torch", "2.9"),),
        ),
        Invalid(
            "import torch as T\ndef setup():\n    T.backends.cudnn.allow_tf32 = False\n",
            fixed='import torch as T\ndef setup():\n    T.backends.cudnn.conv.fp32_precision = "ieee"\n'
            '    T.backends.cudnn.rnn.fp32_precision = "ieee"\n',
            targets=(("target_torch", "2.9"),),
        ),
        Invalid(
            "from torch.backends import cuda\ncuda.matmul.allow_tf32 = args.tf32\n", targets=(("target_torch", "2.10"),)
        ),
        Invalid(
            "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\nif torch.backends.cudnn.allow_tf32:\n    pass\n",
            targets=(("target_torch", "2.9"),),
        ),
        # Whatever the target: the file also uses the new API, and a legacy read would raise.
        Invalid('import torch\ntorch.backends.cudnn.allow_tf32 = True\ntorch.backends.cuda.matmul.fp32_precision = "tf32"\n'),
    )
    valid = valid + (
        # Saving and restoring: only the writes to the flag itself are findings.
        "import torch\ndef tf32_off():\n    old = torch.backends.cuda.matmul.allow_tf32\n    try:\n        yield\n"
        "    finally:\n        old = None\n",
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            # An attribute spelled out (``old = torch.backends.cudnn.allow_tf32`` makes ``old`` an
            # alias in the import table; assigning ``old`` later is not a flag write).
            if not (isinstance(target.target, cst.Attribute) and target.target.attr.value == "allow_tf32"):
                continue
            qualified = self.ctx.names.matches(target.target, *LEGACY_TF32)
            if qualified is None:
                continue
            mixed = self._new_api_line()
            available = TORCH_FP32_PRECISION.available(self.ctx.settings)
            if mixed is None and not available:
                # The legacy flag works on every torch and does not warn (checked on 2.13): the only
                # reason to move is the new API, which the project's oldest torch must have.
                continue
            value = literal_bool(node.value)
            new = {True: "tf32", False: "ieee"}.get(value)
            prefix = self.ctx.code_for(target.target.value)
            if new is not None:
                spelled = ", ".join(f'`{prefix}.{op}.fp32_precision = "{new}"`' if op != "matmul" else
                                    f'`{prefix}.fp32_precision = "{new}"`' for op in LEGACY_TF32[qualified])
            else:
                spelled = f"`{prefix}.{'' if qualified.endswith('matmul.allow_tf32') else 'conv/rnn.'}fp32_precision`"
            message = f"`{qualified}` is the legacy TF32 switch (slated for deprecation): use {spelled}"
            if mixed is not None:
                message += (f"; this file also sets the new `fp32_precision` (line {mixed}): after that, reading a"
                            " legacy `allow_tf32` flag that disagrees with it raises RuntimeError")
            fix = self._fix(node, target, qualified, new) if available else None
            self.report(target.target, message, confidence=Confidence.HIGH, fix=fix)

    def _new_api_line(self) -> int | None:
        """The first write to a ``torch.backends...fp32_precision`` setting (by what the name
        resolves to: a local variable called ``fp32_precision`` is no such write)."""
        for node in self.ctx.all_nodes:
            if type(node) is not cst.Assign:
                continue
            for target in node.targets:
                if isinstance(target.target, cst.Attribute) and target.target.attr.value == "fp32_precision":
                    names = self.ctx.names.qualified_names(target.target)
                    if any(name.startswith("torch.backends.") for name in names):
                        return self.ctx.position(node).start.line
        return None

    def _fix(self, node: cst.Assign, target: cst.AssignTarget, qualified: str, new: str | None) -> Fix | None:
        if new is None or len(node.targets) != 1 or not _lone_small_statement(self.ctx, node):
            return None
        if self._legacy_mentions() != self._fixable_assignments():
            return None  # a legacy read or a computed assignment stays: the new API would make it raise
        prefix = self.ctx.code_for(target.target.value)
        lines = [
            f'{prefix}.fp32_precision = "{new}"' if op == "matmul" else f'{prefix}.{op}.fp32_precision = "{new}"'
            for op in LEGACY_TF32[qualified]
        ]
        indent = _indent_of(self.ctx, node)
        content = (self.ctx.newline + indent).join(lines)
        return Fix(Safety.SAFE, (self.replace(node, content),), "use fp32_precision")

    def _legacy_mentions(self) -> int:
        count = 0
        names = self.ctx.names

        for node in self.ctx.all_nodes:
            if type(node) is cst.Attribute and node.attr.value == "allow_tf32" and names.matches(node, *LEGACY_TF32):
                count += 1
        return count

    def _fixable_assignments(self) -> int:
        count = 0
        names = self.ctx.names

        for node in self.ctx.all_nodes:
            if type(node) is not cst.Assign:
                continue
            target = node.targets[0].target if len(node.targets) == 1 else None
            if isinstance(target, cst.Attribute) and names.matches(target, *LEGACY_TF32):
                if literal_bool(node.value) is not None:
                    count += 1
        return count


# -- DTL702 ------------------------------------------------------------------------------------
LOW_PRECISION = ("float16", "bfloat16")
TENSOR_TYPES = {
    f"torch.{device}{kind}Tensor": (dtype, device.rstrip(".") or None)
    for device in ("", "cuda.")
    for kind, dtype in (("Half", "float16"), ("BFloat16", "bfloat16"), ("Float", "float32"), ("Double", "float64"))
}


class GlobalDefaultDtype(Rule):
    """## What it does
    Flags `torch.set_default_dtype(torch.float16 | torch.bfloat16)` and
    `torch.set_default_tensor_type(...)` (`torch.HalfTensor`, `torch.cuda.HalfTensor`,
    `"torch.cuda.BFloat16Tensor"`, and also the fp32 types, whose API is deprecated) in a script or
    a training function. A helper that restores the previous default (it also calls
    `torch.get_default_dtype()` or sets the default again) is a scoped use: it is not flagged,
    except that `set_default_tensor_type` is still reported as deprecated. A low-precision
    `set_default_tensor_type` is reported first as deprecated (with its `set_default_dtype`
    replacement); in a file that runs no backward (a model built in half precision for inference,
    LLaMA's `Llama.build`) the hazard named is the default leaking to everything created
    afterwards, not training.

    ## Why is this bad?
    The default dtype is process-wide: every parameter created afterwards (`nn.Linear`,
    `nn.LayerNorm`), every `torch.tensor(1.5)`, every mask and position table becomes half
    precision, including the norms, losses and optimizer-facing parameters that autocast would have
    kept in fp32. Libraries scope it for exactly this reason (vLLM's `set_default_torch_dtype`).
    `set_default_tensor_type` is deprecated since torch 2.1 ("torch.set_default_tensor_type() is
    deprecated as of PyTorch 2.1...").

    ## Example
    ```python
    torch.set_default_dtype(torch.bfloat16)
    torch.set_default_tensor_type(torch.cuda.FloatTensor)
    ```

    ## Use instead
    ```python
    model = build_model().to(dtype=torch.bfloat16)  # or autocast around the forward
    torch.set_default_dtype(torch.float32)
    torch.set_default_device("cuda")
    ```

    ## Fix safety
    Unsafe, and only for fp32/fp64 tensor types: `set_default_tensor_type(torch.cuda.FloatTensor)`
    becomes `set_default_dtype(torch.float32)` plus `set_default_device("cuda")`, which also moves
    factory calls that name no device (through a function mode) rather than only the legacy
    constructors. Low-precision defaults get no fix: where the cast belongs is a design choice.
    """

    code = "DTL702"
    name = "global-default-dtype"
    summary = "Half-precision or deprecated global default tensor type"
    queries = (
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "the dtype a literal names (facts/amp.py) and the calls of the enclosing helper (facts/training.py)",
    )
    fix_safety = Safety.UNSAFE
    # The last name parts of ``torch.set_default_dtype`` / ``torch.set_default_tensor_type``; the
    # former reports only a float16/half/bfloat16 dtype literal.
    triggers = (exact_word("set_default_dtype"), exact_word("set_default_tensor_type"))
    required_triggers = (
        tuple(exact_word(word) for word in ("set_default_tensor_type", "float16", "half", "bfloat16")),
    )
    valid = (
        "import torch\ntorch.set_default_dtype(torch.float64)\n",
        "import torch\nimport contextlib\n@contextlib.contextmanager\ndef default_dtype(dtype):\n"
        "    old = torch.get_default_dtype()\n    torch.set_default_dtype(dtype)\n    yield\n    torch.set_default_dtype(old)\n",
        "import torch\ndef load(path):\n    torch.set_default_dtype(torch.float16)\n    try:\n        return build(path)\n"
        "    finally:\n        torch.set_default_dtype(torch.float32)\n",
        "import numpy as np\nnp.set_default_dtype('float16')\n",
    )
    invalid = (
        Invalid("import torch\ntorch.set_default_dtype(torch.bfloat16)\nmodel = GPT(config)\n"),
        Invalid("import torch as T\ndef main():\n    T.set_default_tensor_type(T.cuda.HalfTensor)\n"),
        Invalid("from torch import set_default_tensor_type\nset_default_tensor_type('torch.cuda.BFloat16Tensor')\n"),
        Invalid(
            "import torch\nif torch.cuda.is_available():\n    torch.set_default_tensor_type(torch.cuda.FloatTensor)\n",
            fixed="import torch\nif torch.cuda.is_available():\n    torch.set_default_dtype(torch.float32)\n"
            '    torch.set_default_device("cuda")\n',
        ),
        Invalid(
            "import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)\n",
            fixed="import torch\ntorch.set_default_dtype(torch.float64)\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        names = self.ctx.names
        if names.matches(node.func, "torch.set_default_dtype"):
            self._default_dtype(node)
        elif names.matches(node.func, "torch.set_default_tensor_type"):
            self._tensor_type(node)

    def _scoped(self, node: cst.Call) -> bool:
        """Inside a function that also reads or resets the default: it restores it."""
        function = next((a for a in reversed(self.ctx.ancestors) if isinstance(a, SCOPES)), None)
        if function is None:
            return False
        names = self.ctx.names
        count = 0

        for call in calls_in(function, into_definitions=True):
            if names.matches(call.func, "torch.get_default_dtype", "torch.set_default_dtype", "torch.set_default_tensor_type"):
                count += 1
        return count > 1

    def _default_dtype(self, node: cst.Call) -> None:
        if len(node.args) != 1:
            return
        dtype = dtype_literal(self.ctx.names, node.args[0].value)
        if dtype not in LOW_PRECISION or self._scoped(node):
            return
        message = (
            f"`torch.set_default_dtype({self.ctx.code_for(node.args[0].value)})` makes every tensor and parameter "
            f"created afterwards {dtype}, norms and losses included: cast the model or use autocast instead"
        )
        self.report(node, message, confidence=Confidence.HIGH)

    def _tensor_type(self, node: cst.Call) -> None:
        if len(node.args) != 1 or node.args[0].star:
            return
        argument = node.args[0].value
        text = literal_string(argument)
        qualified = text if text is not None else self.ctx.names.matches(argument, *TENSOR_TYPES)
        if qualified not in TENSOR_TYPES:
            return
        dtype, device = TENSOR_TYPES[qualified]
        device_text = f'`torch.set_default_device("{device}")`' if device else ""
        if dtype in LOW_PRECISION and not self._scoped(node):
            replacement = f"`torch.set_default_dtype(torch.{dtype})`" + (f" and {device_text}" if device else "")
            if any(is_backward(call) for call in training_facts(self.ctx).calls):
                hazard = f"in training it makes every parameter created afterwards {dtype}, norms included: cast the model or use autocast"
            else:  # a model built in half precision to run it: the default leaks to everything after
                hazard = f"every tensor created afterwards in the process is {dtype} too: restore the default once the model is built"
            message = (
                f"`torch.set_default_tensor_type({self.ctx.code_for(argument)})` is deprecated since torch 2.1 (torch warns"
                f" on every call): use {replacement}; {hazard}"
            )
            self.report(node, message, confidence=Confidence.HIGH)
            return
        replacement = f"`torch.set_default_dtype(torch.{dtype})`" + (f" and {device_text}" if device else "")
        message = f"`torch.set_default_tensor_type` is deprecated since torch 2.1: use {replacement}"
        # A scoped half default (set, build, restore) is only deprecated; its fix stays manual.
        fix = self._fix(node, dtype, device) if dtype not in LOW_PRECISION else None
        self.report(node, message, confidence=Confidence.HIGH, fix=fix)

    def _fix(self, node: cst.Call, dtype: str, device: str | None) -> Fix | None:
        if not isinstance(node.func, cst.Attribute) or not _lone_small_statement(self.ctx, node):
            return None
        torch = self.ctx.code_for(node.func.value)
        lines = [f"{torch}.set_default_dtype({torch}.{dtype})"]
        if device:
            lines.append(f'{torch}.set_default_device("{device}")')
        content = (self.ctx.newline + _indent_of(self.ctx, node)).join(lines)
        return Fix(Safety.UNSAFE, (self.replace(node, content),), "use set_default_dtype / set_default_device")


# -- DTL705 ------------------------------------------------------------------------------------
ANOMALY_SETTERS = ("torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly")
ANOMALY_CONTEXTS = ("torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly")
LIGHTNING_TRAINERS = (
    "pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer", "lightning.Trainer",
    "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
)
DEBUG_WORDS = re.compile(r"debug|anomal|detect|nan|sanity|verbose|check", re.IGNORECASE)
TRAINING_CALL = re.compile(r"^(train(_\w+)?|fit(_\w+)?|run_training)$", re.IGNORECASE)


class AnomalyModeLeftOn(Rule):
    """## What it does
    Flags anomaly detection switched on for a whole training run: `torch.autograd.set_detect_anomaly(
    True)` at module level or in a training function, `with torch.autograd.detect_anomaly():` (or
    `set_detect_anomaly(True)`) around a training loop or backward pass, and Lightning's
    `Trainer(detect_anomaly=True)`. Uses under an `if args.debug:`-style guard (a condition that
    mentions debug, anomaly, detect, nan, check...) and in functions named like debugging or tests
    are left alone.

    ## Why is this bad?
    Anomaly mode records a forward traceback for every autograd node and checks every backward
    output for NaN: training runs several times slower. It is a debugging tool ("This mode should
    be enabled only for debugging as the different tests will slow down your program execution"),
    and it is blind to the most common low-precision failures (inf gradients, underflow, NaN from
    the optimizer), so leaving it on buys little.

    ## Example
    ```python
    torch.autograd.set_detect_anomaly(True)
    for batch in loader:
        train_step(batch)
    ```

    ## Use instead
    ```python
    if args.detect_anomaly:
        torch.autograd.set_detect_anomaly(True)
    for batch in loader:
        train_step(batch)
    ```

    ## Fix safety
    No fix: which flag should guard it is the author's choice.
    """

    code = "DTL705"
    name = "anomaly-mode-left-on"
    summary = "Autograd anomaly detection left on for training"
    queries = (
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "whether the switch is given a literal `True` (facts/amp.py); the enclosing functions, loops and `if` guards are read from the syntax; no dtype flow",
    )
    # ``set_detect_anomaly`` / ``detect_anomaly`` (names, or Lightning's keyword argument).
    triggers = ("detect_anomaly",)
    valid = (
        "import torch\nif args.debug:\n    torch.autograd.set_detect_anomaly(True)\n",
        "import torch\ntorch.autograd.set_detect_anomaly(args.detect_anomaly)\n",
        "import torch\ndef test_grads_are_finite():\n    with torch.autograd.detect_anomaly():\n        model(x).sum().backward()\n",
        "import torch\ntorch.autograd.set_detect_anomaly(False)\n",
        "import torch\nwith torch.autograd.detect_anomaly():\n    y = model(x)\n",
    )
    invalid = (
        Invalid("import torch\ntorch.autograd.set_detect_anomaly(True)\nfor batch in loader:\n    step(batch)\n"),
        Invalid(
            "from torch import autograd\ndef train(model, loader):\n    with autograd.detect_anomaly():\n"
            "        for x, y in loader:\n            loss = model(x, y)\n            loss.backward()\n"
        ),
        Invalid("import pytorch_lightning as pl\ntrainer = pl.Trainer(max_epochs=3, detect_anomaly=True)\n"),
        Invalid(
            "import torch as T\nif __name__ == '__main__':\n    T.autograd.set_detect_anomaly(mode=True)\n    main()\n"
        ),
    )
    valid = valid + (
        "import torch\nclass Tracer:\n    def __enter__(self):\n"
        "        self.anomaly = torch.autograd.set_detect_anomaly(True, check_nan=False)\n        self.anomaly.__enter__()\n",
    )

    def _excused(self) -> bool:
        """Under a debug-style ``if``, in a test/debug function or in a test file."""
        if re.search(r"(^|[/\\])(test_[^/\\]*|[^/\\]*_test)\.py$", self.ctx.path):
            return True
        for ancestor in self.ctx.ancestors:
            if isinstance(ancestor, cst.If) and DEBUG_WORDS.search(self.ctx.code_for(ancestor.test)):
                return True
            if isinstance(ancestor, cst.FunctionDef) and re.search(r"debug|test|check", ancestor.name.value, re.I):
                return True
        return False

    def _enables(self, node: cst.Call) -> bool:
        argument = next((a.value for a in node.args if a.keyword is None or a.keyword.value == "mode"), None)
        return literal_bool(argument) is True

    def _is_statement(self, node: cst.Call) -> bool:
        return bool(self.ctx.ancestors) and isinstance(self.ctx.ancestors[-1], cst.Expr)

    def visit_Call(self, node: cst.Call) -> None:
        names = self.ctx.names
        if names.matches(node.func, *ANOMALY_SETTERS):
            # Only the statement form switches it on for good; a kept result is a context
            # manager entered (and left) by hand, as torch's own DebugMode does.
            if not self._is_statement(node) or not self._enables(node) or self._excused():
                return
            where = "at module level" if not any(isinstance(a, SCOPES) for a in self.ctx.ancestors) else "here"
            message = (
                f"`{self.ctx.code_for(node.func)}(True)` {where} keeps autograd anomaly detection on for every step "
                "(several times slower): put it behind a debug flag"
            )
            self.report(node, message, confidence=Confidence.MEDIUM)
        elif names.matches(node.func, *LIGHTNING_TRAINERS):
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "detect_anomaly" and literal_bool(arg.value) is True:
                    if not self._excused():
                        message = (
                            "`detect_anomaly=True` runs the whole fit with autograd anomaly detection "
                            "(several times slower): put it behind a debug flag"
                        )
                        self.report(arg, message, confidence=Confidence.MEDIUM)

    def visit_With(self, node: cst.With) -> None:
        names = self.ctx.names
        for item in node.items:
            call = item.item
            if not isinstance(call, cst.Call):
                continue
            anomaly = names.matches(call.func, *ANOMALY_CONTEXTS) or (
                names.matches(call.func, *ANOMALY_SETTERS) and self._enables(call)
            )
            if not anomaly or self._excused():
                continue
            trained = self._training_inside(node)
            if trained is None:
                continue
            message = (
                f"`with {self.ctx.code_for(call)}` wraps {trained} (line {self.ctx.position(node).start.line}): anomaly "
                "detection slows every step several times; put it behind a debug flag"
            )
            self.report(call, message, confidence=Confidence.MEDIUM)

    def _training_inside(self, node: cst.With) -> str | None:
        found: list[str] = []

        stack: list[cst.CSTNode] = [node.body]
        while stack:  # source order; not into nested defs and lambdas (their code runs later)
            inner = stack.pop()
            kind = type(inner)
            if kind is cst.FunctionDef or kind is cst.Lambda:
                continue
            if kind is cst.For or kind is cst.While:
                found.append("a training loop")
            elif kind is cst.Call:
                func = inner.func
                if isinstance(func, cst.Attribute) and func.attr.value == "backward":
                    found.append("the backward pass")
                elif TRAINING_CALL.match((dotted_name(func) or "").rsplit(".", 1)[-1]):
                    found.append(f"`{dotted_name(func)}(...)`")
            stack.extend(reversed(child_nodes(inner)))
        if "the backward pass" in found:
            return "the backward pass"
        return found[0] if found else None

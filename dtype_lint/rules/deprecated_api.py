"""DTL201: the ``torch.cuda.amp`` / ``torch.cpu.amp`` spellings torch deprecated for ``torch.amp``."""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.torch_version import in_old_torch_fallback
from dtype_lint.findings import Confidence, Edit, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.facts.names import dotted_name
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.migration import (
    TORCH_AMP,
    TORCH_AMP_CUSTOM_FWD,
    TORCH_AMP_GRAD_SCALER,
    Replacement,
)

# Deprecated qualified name -> (device, the torch.amp name that replaces it).
DEPRECATED = {
    f"torch.{device}.amp.{name}": (device, name)
    for device in ("cuda", "cpu")
    for name in ("autocast", "GradScaler", "custom_fwd", "custom_bwd")
    # torch.cpu.amp never had custom_fwd/custom_bwd (checked on 2.13).
    if device == "cuda" or not name.startswith("custom_")
}
DEPRECATED.update(
    {
        "torch.cuda.amp.autocast_mode.autocast": ("cuda", "autocast"),
        "torch.cuda.amp.grad_scaler.GradScaler": ("cuda", "GradScaler"),
    }
)
# The old autocast took (enabled, dtype, cache_enabled) positionally; torch.amp.autocast takes
# (device_type, dtype, enabled, cache_enabled): positional arguments become keywords.
OLD_AUTOCAST_POSITIONS = ("enabled", "dtype", "cache_enabled")


class DeprecatedAmpApi(Rule):
    """## What it does
    Flags `torch.cuda.amp.autocast`, `torch.cuda.amp.GradScaler`, `torch.cuda.amp.custom_fwd`,
    `torch.cuda.amp.custom_bwd` and their `torch.cpu.amp` twins, however they were imported
    (`from torch.cuda import amp`, `from torch.cuda.amp import autocast as ac`, `import torch as T`),
    called or passed around as a value (`ctx = torch.cuda.amp.autocast if amp else nullcontext`;
    reported without a fix, since the call that warns is elsewhere).

    ## Why is this bad?
    Since torch 2.4 these spellings emit a `FutureWarning` on every call ("`torch.cuda.amp.autocast(
    args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` instead.") and are
    slated for removal. The device-generic `torch.amp` API (torch >= 2.3) is the supported one.
    Old-torch fallbacks are not reported: the `else` of a torch-version test, the body of a
    `version < X` test, or an `except (AttributeError, TypeError, ImportError)` (or a bare
    `except:`) after trying `torch.amp` (there the old spelling is what an old torch needs). Nor
    is naming the class without calling it: a type annotation, `isinstance(x, GradScaler)`. A
    local alias (`custom_fwd = torch.cuda.amp.custom_fwd`) is reported where it is assigned, once,
    not at each use.

    Only where the project can take the advice: `torch.amp.autocast` needs torch 2.0,
    `torch.amp.GradScaler` 2.3, `torch.amp.custom_fwd`/`custom_bwd` 2.4. A project whose oldest
    supported torch (`target-torch`, read from its dependencies) is older gets no finding; one
    that declares no torch bound gets the finding with an unsafe fix.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast(dtype=torch.float16):
        loss = model(x)
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.amp.autocast("cuda", dtype=torch.float16):
        loss = model(x)
    ```

    ## Fix safety
    Safe when the project's oldest torch has the replacement, unsafe when its torch bound is
    unknown: `torch.amp.X("cuda", ...)` is what the deprecated wrapper itself calls
    (`custom_fwd`/`custom_bwd` take `device_type=` as a keyword only). Positional
    arguments of the old `autocast` (`enabled`, `dtype`, `cache_enabled`) are rewritten as keywords
    because the new signature orders them differently. The fix needs `torch` imported as a module;
    when it is not, the finding carries no fix. Nor does a call through a name the file also binds
    to something else (mmengine's `scaler_type = GradScaler` in one branch, `scaler_type =
    ShardedGradScaler` in the other): rewriting `scaler_type(...)` would drop the other scaler.
    """

    code = "DTL201"
    name = "deprecated-amp-api"
    summary = "Deprecated `torch.cuda.amp` / `torch.cpu.amp` API"
    queries = (
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "where the file binds a name to the deprecated API as a value (facts/names.py `NameBindings`)",
        "whether the use sits in an old-torch fallback (facts/torch_version.py)",
        "the oldest torch the project supports (`target-torch`, config.py, read from its dependency declarations by targets.py)",
    )
    fix_safety = Safety.SAFE
    # Every part of a matched qualified name ``torch.{cuda,cpu}.amp.<name>`` is a code word (an
    # attribute, an imported module part or an imported name): "amp", the device and the last part.
    triggers = (exact_word("amp"),)
    required_triggers = (
        (exact_word("cuda"), exact_word("cpu")),
        tuple(exact_word(name) for name in ("autocast", "GradScaler", "custom_fwd", "custom_bwd")),
    )
    valid = (
        "import torch\nwith torch.amp.autocast('cuda'):\n    pass\n",
        # Old-torch fallbacks (issue 14): the deprecated spelling only where the new API is missing.
        "import torch\ns = torch.amp.GradScaler('cuda') if TORCH_GE_2_4 else torch.cuda.amp.GradScaler()\n",
        "import torch\ntry:\n    s = torch.amp.GradScaler(device='cuda')\nexcept (AttributeError, TypeError):\n    s = torch.cuda.amp.GradScaler()\n",
        "import torch\nif version.parse(torch.__version__) < version.parse('1.10'):\n    ctx = torch.cuda.amp.autocast()\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n",
        "from torch import autocast\nwith autocast('cuda', dtype=torch.bfloat16):\n    pass\n",
        "from apex import amp\nmodel, opt = amp.initialize(model, opt)\n",
    )
    invalid = (
        Invalid(
            "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
            fixed='import torch\nscaler = torch.amp.GradScaler("cuda")\n',
        ),
        Invalid(
            "import torch as T\nfrom torch.cuda.amp import autocast as ac\nwith ac(True, T.float16):\n    pass\n",
            fixed='import torch as T\nfrom torch.cuda.amp import autocast as ac\nwith T.amp.autocast("cuda", enabled=True, dtype=T.float16):\n    pass\n',
        ),
        Invalid(
            "import torch\nfrom torch.cuda import amp\n@amp.custom_fwd(cast_inputs=torch.float32)\ndef f(ctx, x):\n    return x\n",
            fixed='import torch\nfrom torch.cuda import amp\n@torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)\ndef f(ctx, x):\n    return x\n',
        ),
        Invalid(
            "import torch\nwith torch.cpu.amp.autocast():\n    pass\n",
            fixed='import torch\nwith torch.amp.autocast("cpu"):\n    pass\n',
        ),
        Invalid("from torch.cuda.amp import GradScaler\nscaler = GradScaler(enabled=use_amp)\n"),
        # passed around as a value (timm's train script, issue #13 item 4)
        Invalid("import contextlib\nimport torch\nctx = torch.cuda.amp.autocast if amp else contextlib.nullcontext\n"),
        # The newer-torch branch of a version test is no fallback.
        Invalid("import torch\nif TORCH_VERSION >= (2, 4):\n    s = torch.cuda.amp.GradScaler()\n"),
    )

    def _deprecated(self, node: cst.BaseExpression) -> tuple[str, str, str] | None:
        names = self.ctx.names.qualified_names(node)
        if any(qualified not in DEPRECATED for qualified in names):
            # ``GradScaler`` imported from torch.amp or from torch.cuda.amp depending on the torch
            # version (a version test, a try/except ImportError): the choice is the fallback idiom.
            return None
        for qualified in names:
            return (qualified, *DEPRECATED[qualified])
        return None

    def _torch_spelling(self) -> str | None:
        spellings = self.ctx.names.local_names_for("torch")
        return spellings[0] if spellings else None

    def _through_alias(self, node: cst.BaseExpression, qualified: str) -> bool:
        """``custom_fwd(...)`` / ``@custom_fwd`` where the file assigns ``custom_fwd`` a choice
        (Megatron-LM's ``partial(torch.amp.custom_fwd, ...)`` on torch >= 2.4, the old spelling
        only in the fallback): the assignments are the places to judge, each reported (or
        recognised as a fallback) once there, not again at every use."""
        dotted = dotted_name(node) or ""
        return "." not in dotted and self.ctx.bindings.chooses_between(dotted, qualified)

    def _gate(self, name: str) -> tuple[bool, Replacement, bool | None]:
        """(report?, the replacement, whether the project's torch has it)."""
        replacement = REPLACEMENTS[name]
        available = replacement.available(self.ctx.settings)
        return available is not False, replacement, available

    def _report(self, node, message: str, name: str, fix: Fix | None) -> None:
        report, replacement, available = self._gate(name)
        if not report:
            return
        if available is None:
            message += replacement.unknown_note()
        self.report(node, message, confidence=Confidence.HIGH, fix=replacement.gate_fix(fix, available))

    def visit_Call(self, node: cst.Call) -> None:
        found = self._deprecated(node.func)
        if found is None or self._through_alias(node.func, found[0]):
            return
        if in_old_torch_fallback(self.ctx, node):
            return
        qualified, device, name = found
        message = f"`{qualified}` is deprecated; use `{call_spelling(name, device, more=True)}`"
        fix = None
        # ``scaler_type = GradScaler`` here, ``scaler_type = ShardedGradScaler`` there: rewriting
        # the call would drop the other binding.
        if self.ctx.bindings.sole_qualified_name(node.func) == qualified:
            fix = self._call_fix(node, device, name)
        self._report(node.func, message, name, fix)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._value_use(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._value_use(node)

    def _value_use(self, node: cst.BaseExpression) -> None:
        """The API passed around as a value, not called here: ``ctx = torch.cuda.amp.autocast if
        amp else nullcontext``, ``partial(torch.cuda.amp.autocast, ...)``; the warning comes
        when the value is called, wherever that is. Naming the class is no use of it in an
        annotation or an ``isinstance``/``issubclass`` test (nothing is called, and the old class
        is a subclass of the new one)."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            return
        if isinstance(parent, (cst.Decorator, cst.Attribute, cst.ImportAlias, cst.Import, cst.ImportFrom)):
            return
        if isinstance(node, cst.Name) and self.ctx.enclosing(node, cst.ImportFrom, cst.Import) is not None:
            return
        if isinstance(node, cst.Name) and node.value in self.ctx.bindings.assigned:
            return  # a local alias (``fallback = autocast``): the import's own spelling is reported
        found = self._deprecated(node)
        if found is None or in_old_torch_fallback(self.ctx, node) or self._names_only(node):
            return
        qualified, device, name = found
        if isinstance(parent, cst.Arg) and isinstance(self.ctx.parent(parent), cst.ClassDef):
            message = (f"`{qualified}` is deprecated (subclassed here; its constructor warns); subclass "
                       f"`torch.amp.{name}` and construct it with `{call_spelling(name, device)}`")
        else:
            message = (f"`{qualified}` is deprecated (used here as a value, called elsewhere); use "
                       f"`{value_spelling(name, device)}`")
        self._report(node, message, name, None)

    def _names_only(self, node: cst.BaseExpression) -> bool:
        """In an annotation, or a class argument of ``isinstance``/``issubclass``."""
        if self.ctx.enclosing(node, cst.Annotation) is not None:
            return True
        child, parent = node, self.ctx.parent(node)
        while isinstance(parent, (cst.Tuple, cst.Element, cst.Arg)):
            child, parent = parent, self.ctx.parent(parent)
        return (isinstance(parent, cst.Call) and isinstance(parent.func, cst.Name)
                and parent.func.value in ("isinstance", "issubclass") and parent.func is not child)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        # A bare ``@torch.cuda.amp.custom_fwd``; a called decorator is a Call, seen above.
        if isinstance(node.decorator, cst.Call):
            return
        found = self._deprecated(node.decorator)
        if found is None or self._through_alias(node.decorator, found[0]) or in_old_torch_fallback(self.ctx, node):
            return
        qualified, device, name = found
        torch = self._torch_spelling()
        fix = None
        if torch is not None and self.ctx.bindings.sole_qualified_name(node.decorator) == qualified:
            content = call_spelling(name, device, torch=torch)
            fix = Fix(Safety.SAFE, (self.replace(node.decorator, content),), "use torch.amp")
        self._report(node.decorator, f"`{qualified}` is deprecated; use `{call_spelling(name, device)}`", name, fix)

    def _call_fix(self, node: cst.Call, device: str, name: str) -> Fix | None:
        torch = self._torch_spelling()
        if torch is None or any(arg.star for arg in node.args):
            return None
        edits = [self.replace(node.func, f"{torch}.amp.{name}")]
        device_arg = _device_argument(name, device)
        if node.args:
            first = self.ctx.position(node.args[0]).start
            edits.append(Edit(first.line, first.column + 1, first.line, first.column + 1, f"{device_arg}, "))
            if name == "autocast":
                for index, arg in enumerate(node.args):
                    if arg.keyword is None and index < len(OLD_AUTOCAST_POSITIONS):
                        start = self.ctx.position(arg.value).start
                        keyword = OLD_AUTOCAST_POSITIONS[index]
                        edits.append(Edit(start.line, start.column + 1, start.line, start.column + 1, f"{keyword}="))
        else:
            end = self.ctx.position(node).end
            edits.append(Edit(end.line, end.column, end.line, end.column, device_arg))
        return Fix(Safety.SAFE, tuple(edits), "use torch.amp")


# What replaces each deprecated name, and the torch release that has it.
REPLACEMENTS = {
    "autocast": TORCH_AMP,
    "GradScaler": TORCH_AMP_GRAD_SCALER,
    "custom_fwd": TORCH_AMP_CUSTOM_FWD,
    "custom_bwd": TORCH_AMP_CUSTOM_FWD,
}


def _device_argument(name: str, device: str) -> str:
    # custom_fwd/custom_bwd take the device as a keyword only: ``custom_fwd(fwd=None, *, device_type)``.
    return f'device_type="{device}"' if name.startswith("custom_") else f'"{device}"'


def call_spelling(name: str, device: str, *, torch: str = "torch", more: bool = False) -> str:
    """The replacement call: ``torch.amp.GradScaler("cuda", ...)``, ``torch.amp.custom_fwd(device_type="cuda")``."""
    return f"{torch}.amp.{name}({_device_argument(name, device)}{', ...' if more else ''})"


def value_spelling(name: str, device: str) -> str:
    """What stands for the old name as a value: a decorator factory's configured decorator, or
    the class/function with its device bound (``functools.partial`` binds ``device_type``
    positionally only where it is not keyword-only)."""
    if name.startswith("custom_"):
        return call_spelling(name, device)
    return f'functools.partial(torch.amp.{name}, "{device}")'

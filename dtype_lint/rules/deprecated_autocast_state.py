"""DTL210: the per-device autocast state functions torch deprecated for device-generic ones."""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.torch_version import in_old_torch_fallback
from dtype_lint.findings import Confidence, Edit, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.migration import TORCH_AUTOCAST_STATE

# Deprecated function -> (replacement, device). Every one warns on torch 2.13 ("torch.get_autocast_gpu_dtype()
# is deprecated. Please use torch.get_autocast_dtype('cuda') instead."); the replacements exist since 2.4.
DEPRECATED = {
    f"torch.{verb}_autocast_{device}_{what}": (f"torch.{verb}_autocast_{what}", torch_device)
    for device, torch_device in (("gpu", "cuda"), ("cpu", "cpu"), ("xla", "xla"), ("ipu", "ipu"))
    for verb, what in (("get", "dtype"), ("set", "dtype"), ("set", "enabled"))
}
DEPRECATED.update({
    f"torch.is_autocast_{device}_enabled": ("torch.is_autocast_enabled", device)
    for device in ("cpu", "xla", "ipu")
})
# ``torch.cuda.set_autocast_gpu_dtype`` does not exist; the CUDA "enabled" pair was never per-device
# (``torch.is_autocast_enabled()`` / ``torch.set_autocast_enabled(bool)`` are the CUDA spellings).
for _name in ("torch.set_autocast_gpu_enabled",):
    DEPRECATED.pop(_name, None)


class DeprecatedAutocastState(Rule):
    """## What it does
    Flags the per-device autocast state functions: `torch.get_autocast_gpu_dtype()`,
    `torch.get_autocast_cpu_dtype()`, `torch.set_autocast_gpu_dtype(dtype)`,
    `torch.is_autocast_cpu_enabled()`, `torch.set_autocast_cpu_enabled(flag)` and their XLA/IPU
    twins, however `torch` was imported. Old-torch fallbacks (the else of a torch-version test, a
    `hasattr(torch, ...)` probe, an `except AttributeError` after trying the new function) are
    not reported.

    ## Why is this bad?
    Since torch 2.4 each call warns ("torch.get_autocast_gpu_dtype() is deprecated. Please use
    torch.get_autocast_dtype('cuda') instead.") and the functions are slated for removal. Custom
    autograd functions and attention kernels call them on every forward, so the warning repeats
    and hides others. The device-generic functions take the device type as their first argument.

    ## Example
    ```python
    dtype = torch.get_autocast_gpu_dtype()
    ```

    ## Use instead
    ```python
    dtype = torch.get_autocast_dtype("cuda")
    ```

    Only where the project can take the advice: a project whose oldest supported torch
    (`target-torch`, read from its dependencies) is older than 2.4 gets no finding.

    ## Fix safety
    Safe when the project's oldest torch is 2.4 or later (the deprecated function calls the
    device-generic one with that device); unsafe when the project declares no torch bound. The fix needs `torch` imported as a module, and
    is not offered for a call through a name the file also binds to something else (`get_dtype =
    torch.get_autocast_gpu_dtype` in one branch, another function in the other).
    """

    code = "DTL210"
    name = "deprecated-autocast-state"
    summary = "Deprecated per-device autocast state function (`torch.get_autocast_gpu_dtype`, ...)"
    queries = (
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "whether the use sits in an old-torch fallback (facts/torch_version.py)",
        "the oldest torch the project supports (`target-torch`, config.py, read from its dependency declarations by targets.py)",
    )
    fix_safety = Safety.SAFE
    triggers = tuple(exact_word(name.rsplit(".", 1)[-1]) for name in sorted(DEPRECATED))
    valid = (
        "import torch\ndtype = torch.get_autocast_dtype('cuda')\n",
        "import torch\nenabled = torch.is_autocast_enabled('cpu')\n",
        "import torch\nenabled = torch.is_autocast_enabled()\n",
        # the fallback for a torch without the device-generic function
        "import torch\nif hasattr(torch, 'get_autocast_dtype'):\n    d = torch.get_autocast_dtype('cuda')\n"
        "else:\n    d = torch.get_autocast_gpu_dtype()\n",
    )
    invalid = (
        Invalid(
            "import torch\ndtype = torch.get_autocast_gpu_dtype()\n",
            fixed='import torch\ndtype = torch.get_autocast_dtype("cuda")\n',
        ),
        Invalid(
            "import torch as T\nif T.is_autocast_cpu_enabled():\n    x = x.to(T.get_autocast_cpu_dtype())\n",
            fixed='import torch as T\nif T.is_autocast_enabled("cpu"):\n    x = x.to(T.get_autocast_dtype("cpu"))\n',
        ),
        Invalid(
            "import torch\ntorch.set_autocast_gpu_dtype(torch.bfloat16)\n",
            fixed='import torch\ntorch.set_autocast_dtype("cuda", torch.bfloat16)\n',
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        found = self._deprecated(node.func)
        if found is None or in_old_torch_fallback(self.ctx, node) or self._after_trying_new(node):
            return
        qualified, replacement, device = found
        available = TORCH_AUTOCAST_STATE.available(self.ctx.settings)
        if available is False:
            return  # the project still supports a torch without the device-generic function
        message = (f"`{qualified}()` is deprecated since torch 2.4 (a warning on every call); use "
                   f"`{replacement}(\"{device}\"{', ...' if node.args else ''})`")
        if available is None:
            message += TORCH_AUTOCAST_STATE.unknown_note()
        fix = TORCH_AUTOCAST_STATE.gate_fix(self._fix(node, qualified, replacement, device), available)
        self.report(node.func, message, confidence=Confidence.HIGH, fix=fix)

    def _deprecated(self, func: cst.BaseExpression) -> tuple[str, str, str] | None:
        for qualified in self.ctx.names.qualified_names(func):
            if qualified in DEPRECATED:
                return (qualified, *DEPRECATED[qualified])
        return None

    def _after_trying_new(self, node: cst.CSTNode) -> bool:
        """``try: torch.get_autocast_dtype("cuda") except AttributeError: torch.get_autocast_gpu_dtype()``."""
        handler = self.ctx.enclosing(node, cst.ExceptHandler)
        attempt = self.ctx.parent(handler) if handler is not None else None
        if not isinstance(attempt, cst.Try):
            return False
        tried = self.ctx.code_for(attempt.body)
        return any(replacement.rsplit(".", 1)[-1] + "(" in tried for replacement, _ in DEPRECATED.values())

    def _fix(self, node: cst.Call, qualified: str, replacement: str, device: str) -> Fix | None:
        spellings = self.ctx.names.local_names_for("torch")
        if not spellings or any(arg.star for arg in node.args):
            return None
        if self.ctx.bindings.sole_qualified_name(node.func) != qualified:
            return None  # ``get_dtype = torch.get_autocast_gpu_dtype`` here, rebound there
        torch = spellings[0]
        edits = [self.replace(node.func, torch + replacement[len("torch"):])]
        if node.args:
            first = self.ctx.position(node.args[0]).start
            edits.append(Edit(first.line, first.column + 1, first.line, first.column + 1, f'"{device}", '))
        else:
            end = self.ctx.position(node).end
            edits.append(Edit(end.line, end.column, end.line, end.column, f'"{device}"'))
        return Fix(Safety.SAFE, tuple(edits), "use the device-generic function")

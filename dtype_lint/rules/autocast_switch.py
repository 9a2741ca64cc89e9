"""DTL209: an autocast whose "on" state is not low precision (a float32 dtype, an inverted flag)."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.amp import _argument, autocast_info
from dtype_lint.facts.names import dotted_name
from dtype_lint.findings import Confidence
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule

# A flag that says "mixed precision on" (``use_amp``, ``args.fp16``, ``cfg.mixed_precision``) ...
_LOWP_FLAG = re.compile(r"(^|_)(amp|fp16|half|bf16|mixed|mixed_precision|autocast|lowp|low_precision)(_|$)", re.I)
# ... unless its name negates it (``no_amp``, ``disable_fp16``).
_NEGATED_FLAG = re.compile(r"(^|_)(no|not|disable|disabled|without|skip)(_|$)", re.I)
# A flag that says "full precision" (``args.fp32``, ``full_precision``): autocast on when it is set is inverted.
_FULL_PRECISION_FLAG = re.compile(r"(^|_)(fp32|float32|full_precision|no_amp|disable_amp|no_fp16|no_autocast)(_|$)", re.I)


def _flag_name(node: cst.BaseExpression | None) -> str | None:
    """The last part of a plain flag (``args.use_amp`` -> "use_amp"), else None."""
    text = dotted_name(node) if node is not None else None
    return text.rsplit(".", 1)[-1] if text else None


def says_lowp(name: str) -> bool:
    return bool(_LOWP_FLAG.search(name)) and not _NEGATED_FLAG.search(name) and not _FULL_PRECISION_FLAG.search(name)


class AutocastNotLowp(Rule):
    """## What it does
    Flags an autocast region whose switched-on state does not compute in float16/bfloat16:
    - `dtype=torch.float32` (or float64) with `enabled=` tied to a flag (`enabled=amp`): the AMP
      switch turns on a float32 region;
    - `enabled=not use_amp` (or `enabled=args.fp32`): autocast is on exactly when the flag asks for
      full precision, and off when it asks for mixed precision;
    - the same inversion as a conditional context: `nullcontext() if use_amp else
      torch.autocast(...)` (intel/auto-round#2393).

    ## Why is this bad?
    Autocast's `dtype` is the *low* precision its matmuls and convolutions run in. With float32,
    CUDA autocast is a float32 region (no speed-up, no memory saved) while a GradScaler enabled by the
    same flag scales float32 gradients for nothing; on the CPU and other devices torch warns "autocast,
    but the target dtype is not supported. Disabling autocast." and the region is plain float32.
    Either way the "AMP" run is not mixed precision, and a float32 fallback meant to cure fp16 NaNs
    (ultralytics/yolov5#11746) is spelled as an AMP mode. An inverted flag runs the fp16 numerics in
    the configuration that was meant to be the safe float32 one.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.float32, enabled=amp):
        loss = criterion(model(x), y)
    with torch.autocast("cuda", enabled=not use_amp):
        loss = criterion(model(x), y)
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.float16, enabled=amp):  # float32: enabled=False
        loss = criterion(model(x), y)
    with torch.autocast("cuda", enabled=use_amp):
        loss = criterion(model(x), y)
    ```

    ## Fix safety
    No fix: whether the author meant float32 or mixed precision is a decision only they can make.
    """

    code = "DTL209"
    name = "autocast-not-lowp"
    summary = "Autocast whose switched-on state is not float16/bfloat16 (float32 dtype, inverted flag)"
    queries = (
        "what an autocast construction says: its dtype and its `enabled=` expression (facts/amp.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    # Every autocast name ends in the word "autocast"; a finding needs a float32/float64 dtype or a
    # precision flag in the enabled= argument.
    triggers = (exact_word("autocast"),)
    required_triggers = (
        ("float32", exact_word("float"), "float64", exact_word("double"), "amp", "fp16", "half", "bf16",
         "mixed", "lowp", "low_precision", "fp32", "full_precision"),
    )
    valid = (
        "import torch\nwith torch.autocast('cuda', dtype=torch.float16, enabled=amp):\n    y = model(x)\n",
        "import torch\nwith torch.autocast('cuda', enabled=use_amp):\n    y = model(x)\n",
        "import torch\nwith torch.autocast('cuda', enabled=not args.no_amp):\n    y = model(x)\n",
        "import torch\nwith torch.autocast('cuda', enabled=not args.fp32):\n    y = model(x)\n",
        "import torch\nwith torch.autocast('cuda', dtype=torch.float32, enabled=False):\n    y = model(x)\n",
        # A float32 island nested inside a low-precision region: the documented way is enabled=False,
        # but on CUDA this runs the island in float32 as meant.
        "import torch\nwith torch.autocast('cuda', dtype=torch.float16):\n    h = model(x)\n"
        "    with torch.autocast('cuda', dtype=torch.float32, enabled=use_fp32_head):\n        y = head(h.float())\n",
    )
    invalid = (
        Invalid("import torch\nwith torch.cuda.amp.autocast(enabled=amp, dtype=torch.float32):\n    y = model(x)\n"),
        Invalid("import torch\nwith torch.autocast('cuda', enabled=not self.use_amp):\n    y = model(x)\n"),
        Invalid("import torch\nwith torch.autocast(device_type='cuda', enabled=args.fp32):\n    y = model(x)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        info = autocast_info(self.ctx.names, node)
        if info is None or info.node is None or info.enabled is False:
            return
        qualified = self.ctx.names.matches(node.func, "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
                                           "torch.cuda.amp.autocast_mode.autocast")
        enabled_node = _argument(node, "enabled", 0 if qualified else 2)
        if info.dtype in ("float32", "float64") and enabled_node is not None and info.enabled is None:
            if self._inside_autocast(node):
                return
            flag = self.ctx.code_for(enabled_node)
            self.report(
                node,
                f"`enabled={flag}` switches on an autocast whose dtype is torch.{info.dtype}: the AMP case is not"
                " mixed precision (CUDA runs a float32 region, other devices disable autocast with a warning);"
                " use a float16/bfloat16 dtype for AMP, or `enabled=False` where float32 is meant",
                confidence=Confidence.MEDIUM,
            )
            return
        inverted = self._inverted_flag(enabled_node)
        if inverted is not None:
            self.report(
                node,
                f"autocast is on when {inverted}: `enabled={self.ctx.code_for(enabled_node)}` inverts the"
                " precision switch (mixed precision in the full-precision configuration and float32 in the AMP"
                " one)",
                confidence=Confidence.MEDIUM,
            )

    @staticmethod
    def _inverted_flag(enabled: cst.BaseExpression | None) -> str | None:
        if isinstance(enabled, cst.UnaryOperation) and isinstance(enabled.operator, cst.Not):
            name = _flag_name(enabled.expression)
            if name and says_lowp(name):
                return f"`{name}` is off"
            return None
        name = _flag_name(enabled)
        if name and _FULL_PRECISION_FLAG.search(name) and not name.lower().startswith(("use_amp", "amp")):
            return f"`{name}` asks for full precision"
        return None

    def visit_IfExp(self, node: cst.IfExp) -> None:
        """``nullcontext() if model_context.amp else torch.autocast(...)``: the autocast is the
        context of the runs where the mixed-precision flag is off (intel/auto-round#2393)."""
        if autocast_info(self.ctx.names, node.orelse) is not None and _null_context(self.ctx, node.body):
            autocast_when = False
        elif autocast_info(self.ctx.names, node.body) is not None and _null_context(self.ctx, node.orelse):
            autocast_when = True
        else:
            return
        test = node.test
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, autocast_when = test.expression, not autocast_when
        name = _flag_name(test)
        if not name:
            return
        if says_lowp(name) and not autocast_when:
            inverted = f"`{name}` is off"
        elif _FULL_PRECISION_FLAG.search(name) and autocast_when:
            inverted = f"`{name}` asks for full precision"
        else:
            return
        self.report(
            node,
            f"autocast is the context when {inverted} and the null context otherwise: the conditional inverts"
            " the precision switch (mixed precision in the full-precision configuration and float32 in the AMP one)",
            confidence=Confidence.MEDIUM,
        )

    def _inside_autocast(self, node: cst.Call) -> bool:
        current = self.ctx.enclosing(node, cst.With)
        while current is not None:
            if any(autocast_info(self.ctx.names, item.item) is not None and item.item is not node
                   for item in current.items):
                return True
            current = self.ctx.enclosing(current, cst.With)
        return False


def _null_context(ctx, node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and ctx.names.matches(node.func, "contextlib.nullcontext") is not None

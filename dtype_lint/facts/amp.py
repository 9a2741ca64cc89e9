"""What an autocast context or a GradScaler construction says: device, dtype, enabled.

Shared by the AMP-protocol rules and the dtype flow, so every rule reads ``torch.autocast("cuda",
dtype=torch.bfloat16, enabled=args.amp)`` the same way.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from dtype_lint.facts.names import ImportTable, dotted_name

AUTOCAST = (
    "torch.autocast",
    "torch.amp.autocast",
    "torch.amp.autocast_mode.autocast",
    "torch.cuda.amp.autocast",
    "torch.cuda.amp.autocast_mode.autocast",
    "torch.cpu.amp.autocast",
)
GRAD_SCALER = (
    "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
    "torch.cpu.amp.GradScaler",
)
# Low-precision dtypes by every spelling torch accepts.
DTYPE_NAMES = {
    "torch.float16": "float16",
    "torch.half": "float16",
    "torch.bfloat16": "bfloat16",
    "torch.float32": "float32",
    "torch.float": "float32",
    "torch.float64": "float64",
    "torch.double": "float64",
}


# The dtype autocast runs at when none is given, per device.
DEVICE_DEFAULTS = {"cuda": "float16", "cpu": "bfloat16"}


@dataclasses.dataclass(frozen=True)
class AutocastInfo:
    device: str | None  # "cuda", "cpu", ... or None when not a literal
    dtype: str | None  # "float16", "bfloat16", ... None when not given (the device default)
    enabled: bool | None  # None when it depends on a run-time value
    node: cst.Call | None = None

    @property
    def effective_dtype(self) -> str | None:
        """The dtype autocast runs at: explicit, or the device default (CUDA fp16, CPU bf16)."""
        if self.dtype is not None:
            return self.dtype
        return DEVICE_DEFAULTS.get(self.device or "")


def _argument(call: cst.Call, keyword: str, position: int | None) -> cst.BaseExpression | None:
    for index, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
        if arg.keyword is None and arg.star == "" and position is not None and index == position:
            return arg.value
    return None


def literal_string(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def literal_bool(node: cst.BaseExpression | None) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def dtype_literal(names: ImportTable, node: cst.BaseExpression | None) -> str | None:
    """``torch.float16`` / ``T.half`` / ``"bfloat16"`` -> "float16" / "bfloat16"; else None."""
    if node is None:
        return None
    text = literal_string(node)
    if text is not None:
        return DTYPE_NAMES.get(f"torch.{text}")
    for qualified in names.qualified_names(node):
        if qualified in DTYPE_NAMES:
            return DTYPE_NAMES[qualified]
    return None


def autocast_signature(qualified: str) -> tuple[str | None, int | None, int, int]:
    """(the device the callable fixes or None, and the positions of ``device_type``, ``dtype`` and
    ``enabled``): ``torch.cuda.amp.autocast(enabled, dtype)`` against ``torch.autocast(device_type,
    dtype, enabled)``. Shared by the libcst reader below and the project summary's ``ast`` one."""
    if qualified.startswith("torch.cuda."):
        return "cuda", None, 1, 0
    if qualified.startswith("torch.cpu."):
        return "cpu", None, 1, 0
    return None, 0, 1, 2


def autocast_info(names: ImportTable, call: cst.BaseExpression) -> AutocastInfo | None:
    """The autocast context ``call`` creates, or None when it is not one."""
    if not isinstance(call, cst.Call):
        return None
    qualified = names.matches(call.func, *AUTOCAST)
    if qualified is None:
        # accelerate's ``accelerator.autocast()``: the dtype is the Accelerator's mixed_precision.
        dotted = dotted_name(call.func)
        if dotted and dotted.endswith("accelerator.autocast"):
            return AutocastInfo(device=None, dtype=None, enabled=True, node=call)
        return None
    fixed, device_position, dtype_position, enabled_position = autocast_signature(qualified)
    device = fixed if fixed is not None else literal_string(_argument(call, "device_type", device_position))
    dtype = dtype_literal(names, _argument(call, "dtype", dtype_position))
    enabled_node = _argument(call, "enabled", enabled_position)
    enabled = True if enabled_node is None else literal_bool(enabled_node)
    return AutocastInfo(device=device, dtype=dtype, enabled=enabled, node=call)


def is_grad_scaler(names: ImportTable, call: cst.BaseExpression) -> bool:
    return isinstance(call, cst.Call) and names.matches(call.func, *GRAD_SCALER) is not None


# timm's ``NativeScaler`` and the ``NativeScalerWithGradNormCount`` copied into MAE, BEiT, ConvNeXt,
# Swin...: a callable ``loss_scaler(loss, optimizer, clip_grad=...)`` that owns a GradScaler.
SCALER_WRAPPER_NAME = re.compile(r"^NativeScaler")


def scaler_wrapper_classes(classes: dict[str, cst.ClassDef], names: ImportTable) -> frozenset[str]:
    """Classes of this file whose body builds a GradScaler (``self._scaler = GradScaler()``)."""
    return frozenset(
        name for name, node in classes.items()
        if any(is_grad_scaler(names, call) for call in _calls_in(node))
    )


def is_scaler_wrapper(names: ImportTable, call: cst.BaseExpression, local: frozenset[str] = frozenset()) -> bool:
    """A construction of a loss-scaler wrapper: a class of this file that builds a GradScaler, or an
    imported class (or module attribute) named like timm's ``NativeScaler``."""
    if not isinstance(call, cst.Call):
        return False
    dotted = dotted_name(call.func)
    if not dotted:
        return False
    last = dotted.rsplit(".", 1)[-1]
    if last in local:
        return True
    return bool(SCALER_WRAPPER_NAME.match(last)) and (bool(names.qualified_names(call.func)) or "." in dotted)


def _calls_in(node: cst.CSTNode):
    from dtype_lint.facts.training import calls_in

    return calls_in(node, into_definitions=True)


def autocast_of_with(names: ImportTable, node: cst.With) -> AutocastInfo | None:
    for item in node.items:
        info = autocast_info(names, item.item)
        if info is not None:
            return info
    return None

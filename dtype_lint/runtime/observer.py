"""One TorchFunctionMode that maps CUDA to the CPU (when emulating) and watches user-called ops.

Cheap by construction: every call pays a name lookup and, for the few ops a rule cares about, a
look at its caller; dtype sets are built only for ops that combine tensors, and finiteness is
checked only for low-precision results of ops that can overflow or divide by zero, and only when
the user's own line called the op. Frames are walked only when something is recorded.
"""

from __future__ import annotations

import math
import os
import sys

import torch
from torch.overrides import TorchFunctionMode

from dtype_lint.runtime import emulation
from dtype_lint.runtime.messages import MISMATCH_CODES
from dtype_lint.runtime.state import State

LOW_PRECISION = (torch.float16, torch.bfloat16)

# Ops where two floating dtypes meeting means a silent promotion or, for some, an error.
COMBINING_OPS = frozenset(
    {
        "add", "sub", "mul", "div", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
        "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "matmul", "mm", "bmm", "addmm", "baddbmm",
        "einsum", "cat", "concat", "stack", "where", "linear", "conv1d", "conv2d", "conv3d", "bilinear",
        "scaled_dot_product_attention", "add_", "mul_", "addcmul", "addcdiv",
    }
)
# Ops whose low-precision output can become inf/NaN from finite inputs.
OVERFLOW_OPS = frozenset(
    {
        "exp", "exp_", "pow", "__pow__", "square", "var", "std", "norm", "sum", "mean", "softmax",
        "log_softmax", "log", "log_", "log1p", "div", "div_", "__truediv__", "__rtruediv__", "reciprocal",
        "rsqrt", "sqrt", "masked_fill", "masked_fill_", "matmul", "__matmul__", "mul", "__mul__", "add",
        "__add__", "sub", "__sub__", "cumsum", "where", "full", "fill_", "logsumexp", "sigmoid",
        "layer_norm", "cross_entropy", "mse_loss",
    }
)
# Which rules an inf/NaN coming out of each kind of op speaks for (all of them: a model or the
# default dtype made float16 by a flagged line, via origins).
_CONTEXT_CODES = ("DTL401", "DTL404", "DTL702")
_DIVIDING = frozenset(
    {"div", "div_", "__truediv__", "__rtruediv__", "reciprocal", "rsqrt", "sqrt", "log", "log_", "log1p"}
)
_FILLING = frozenset(
    {"masked_fill", "masked_fill_", "full", "fill_", "add", "__add__", "sub", "__sub__", "mul", "__mul__", "where"}
)
_NORMALISING = frozenset({"softmax", "log_softmax", "logsumexp"})


def nonfinite_codes(op: str) -> tuple[str, ...]:
    if op in _DIVIDING:
        return ("DTL504",) + _CONTEXT_CODES
    if op in _FILLING:
        return ("DTL501", "DTL502", "DTL503") + _CONTEXT_CODES
    if op in _NORMALISING:
        return ("DTL502", "DTL503") + _CONTEXT_CODES
    return ("DTL503", "DTL505", "DTL507") + _CONTEXT_CODES


WATCHED = (
    COMBINING_OPS
    | OVERFLOW_OPS
    | emulation.CUDA_FP32_OPS
    | set(emulation.CUDA_AUTOCAST_ERRORS)
    | {"cuda", "to", "pin_memory"}
)

# Files whose frames sit between the user and the mode: Python wrappers that re-dispatch.
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_WRAPPER_FILES = frozenset(
    os.path.join(_TORCH_DIR, *parts)
    for parts in (("overrides.py",), ("functional.py",), ("nn", "functional.py"), ("_tensor.py",))
)


def _float_dtypes(values) -> list:
    dtypes = []
    for value in values:
        if isinstance(value, torch.Tensor):
            if value.is_floating_point() and value.dim() > 0 and value.dtype not in dtypes:
                dtypes.append(value.dtype)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, torch.Tensor) and item.is_floating_point() and item.dim() > 0:
                    if item.dtype not in dtypes:
                        dtypes.append(item.dtype)
    return dtypes


def _short(dtype) -> str:
    return str(dtype).replace("torch.", "")


class Observer(TorchFunctionMode):
    def __init__(self, state: State):
        super().__init__()
        self.state = state
        self.recorder = state.recorder
        self.emulated = state.emulated
        self._caller_kind: dict = {}  # code object -> "user" | "wrapper" | "other"

    def _user_caller(self):
        """The frame that called the op when it is the user's (skipping torch's re-dispatch)."""
        frame = sys._getframe(2)
        for _ in range(4):
            if frame is None:
                return None
            code = frame.f_code
            kind = self._caller_kind.get(code)
            if kind is None:
                filename = code.co_filename
                if filename in _WRAPPER_FILES:
                    kind = "wrapper"
                elif self.recorder.user_path(filename) is not None:
                    kind = "user"
                else:
                    kind = "other"
                self._caller_kind[code] = kind
            if kind == "user":
                return frame
            if kind == "other":
                return None
            frame = frame.f_back
        return None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", None)
        if name not in WATCHED and not (self.emulated and "device" in kwargs):
            return func(*args, **kwargs)
        if self.emulated:
            args, kwargs, shortcut = emulation.map_cuda_call(name, args, kwargs, self.state)
            if shortcut is not emulation._NOT_HANDLED:
                return shortcut
            if self.state.cuda_autocast_depth and torch.is_autocast_enabled("cpu"):
                if name in emulation.CUDA_FP32_OPS:
                    args, kwargs = emulation.upcast_for_cuda_policy(args, kwargs)
                elif name in emulation.CUDA_AUTOCAST_ERRORS:
                    raise RuntimeError(emulation.CUDA_AUTOCAST_ERRORS[name])
        caller = None
        if name in COMBINING_OPS:
            dtypes = _float_dtypes(args)
            if len(dtypes) > 1 and not torch.is_autocast_enabled("cpu") and not torch.is_autocast_enabled("cuda"):
                caller = self._user_caller()
                if caller is not None:
                    self._record_mixed(name, dtypes, caller)
        result = func(*args, **kwargs)
        if name in OVERFLOW_OPS and isinstance(result, torch.Tensor) and result.dtype in LOW_PRECISION:
            # Who called it is a few dict lookups; finiteness is a pass over the tensor.
            caller = caller or self._user_caller()
            if caller is not None and not bool(torch.isfinite(result).all()):
                self._record_nonfinite(name, args, result, caller)
        return result

    def _record_mixed(self, name, dtypes, caller) -> None:
        stack = self.recorder.user_stack(caller)
        names = " and ".join(_short(d) for d in dtypes)
        self.recorder.claim(
            "mixed-dtype",
            MISMATCH_CODES,
            f"{name}() combined {names} tensors outside autocast",
            stack,
            origins=self.state.origins(),
            detail={"op": name, "dtypes": [_short(d) for d in dtypes]},
            key=("mixed-dtype", tuple(stack[0]) if stack else None, name),
            code="DTL107",  # two operands of one op
        )

    def _record_nonfinite(self, name, args, result, caller) -> None:
        if any(isinstance(a, float) and not math.isfinite(a) for a in args):
            return  # asked for: masked_fill(mask, float("-inf")) before a softmax
        inputs = [a for a in args if isinstance(a, torch.Tensor)]
        if not all(bool(torch.isfinite(a).all()) for a in inputs if a.is_floating_point()):
            return  # inf/NaN came in: the line that made it is elsewhere
        stack = self.recorder.user_stack(caller)
        nan = bool(torch.isnan(result).any())
        kind = "NaN" if nan else "inf"
        self.recorder.claim(
            "nonfinite",
            nonfinite_codes(name),
            f"{name}() produced {kind} in {_short(result.dtype)} from finite inputs",
            stack,
            origins=self.state.origins() + self.state.nonfinite_origins,
            detail={
                "op": name,
                "dtype": _short(result.dtype),
                "input_dtypes": [_short(a.dtype) for a in inputs],
                "nonfinite": int((~torch.isfinite(result)).sum()),
                "numel": result.numel(),
            },
            key=("nonfinite", tuple(stack[0]) if stack else None),
        )

"""Hooks on the training protocol: GradScaler, optimizers, clipping, backward, casts, collectives,
warnings and uncaught exceptions. Each records a claim only when a rule's defect is visible."""

from __future__ import annotations

import functools
import math
import os
import signal
import sys
import threading
import types
import warnings

import torch

from dtype_lint.runtime import messages, silent
from dtype_lint.runtime.state import State

LOW_PRECISION = (torch.float16, torch.bfloat16)
MAX_COLLECTIVES = 200
MAX_DDP_TENSORS = 5000


def _short(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _dtype_in(args, kwargs):
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.dtype):
            return value
    return None


def install(state: State) -> None:
    from dtype_lint.runtime.scaled import ScaledGradients

    state.scaled = ScaledGradients()
    state.on_end.append(lambda: check_hand_updates(state))  # the last iteration's hand update
    _hook_scaler(state)
    _hook_optimizer(state)
    _hook_clipping(state)
    _hook_backward(state)
    _hook_casts(state)
    _hook_anomaly(state)
    _hook_collectives(state)
    _hook_warnings(state)
    _hook_exceptions(state)
    _hook_signals(state)


# -- GradScaler --------------------------------------------------------------------------------
def _scaler_info(scaler) -> dict:
    # "unscaled": ids of the optimizers unscale_() ran for since the last update().
    return scaler.__dict__.setdefault("_dtl", {"unscaled": set(), "scale_site": None})


def _params(optimizer) -> list:
    return [param for group in optimizer.param_groups for param in group["params"]]


def _grad_dtypes(optimizer) -> list:
    seen = []
    for param in _params(optimizer):
        if param.grad is not None and param.grad.dtype not in seen:
            seen.append(param.grad.dtype)
    return seen


def check_hand_updates(state: State) -> None:
    """Parameters updated by hand from gradients still multiplied by the loss scale (no optimizer
    stepped them, no unscale_ ran): checked at the next scaled loss and when the process ends."""
    if state.scaled is None or not state.scaled.marks:
        return
    for mark in state.scaled.moved_against_gradient():
        state.weights_broken = True
        for origin in mark.origins[:1]:
            if origin not in state.nonfinite_origins and len(state.nonfinite_origins) < 16:
                state.nonfinite_origins.append(origin)
        state.recorder.claim(
            "update-from-scaled-gradients",
            ("DTL305",),
            f"a {_short(mark.values.dtype)} parameter was updated from its gradient while the gradient was still "
            f"multiplied by the loss scale {mark.scale:g} (no unscale_, no scaler.step()): every update is "
            f"{mark.scale:g}x too large and steps with inf/NaN gradients are not skipped",
            [],
            origins=mark.origins,
            detail={"scale": mark.scale},
            key="update-from-scaled-gradients",
        )


def _check_loss(state: State, loss) -> None:
    """A loss already inf/NaN before scaling: no loss scale can save that step (forward overflow)."""
    if loss.is_floating_point() and not bool(torch.isfinite(loss).all()):
        state.nonfinite_loss = True
        if state.weights_broken:
            return  # it descends from weights an earlier claim already saw go bad
        kind = "NaN" if bool(torch.isnan(loss).any()) else "inf"
        state.recorder.claim(
            "nonfinite-loss",
            messages.OVERFLOW_CODES,
            f"the loss given to GradScaler.scale() was {kind} ({_short(loss.dtype)}) before any scaling: the "
            "forward pass overflowed, and the scaler skips every step where it does",
            state.recorder.user_stack(),
            origins=state.origins() + state.nonfinite_origins,
            detail={"dtype": _short(loss.dtype), "value": kind},
            key="nonfinite-loss",
        )


def _hook_scaler(state: State) -> None:
    scaler_cls = torch.amp.grad_scaler.GradScaler
    recorder = state.recorder
    init, scale, unscale_, step, update = (
        scaler_cls.__init__, scaler_cls.scale, scaler_cls.unscale_, scaler_cls.step, scaler_cls.update,
    )

    @functools.wraps(init)
    def hooked_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _scaler_info(self)["origin"] = recorder.site()
        state.scalers.add(self)

    @functools.wraps(scale)
    def hooked_scale(self, outputs):
        scaled = scale(self, outputs)  # first: the emulation settles there whether a CUDA scaler is on
        if not self.is_enabled():
            return scaled
        info = _scaler_info(self)
        info["scale_site"] = site = recorder.site()
        if site and site not in state.scaler_sites and len(state.scaler_sites) < 16:
            state.scaler_sites.append(site)
        check_hand_updates(state)  # the previous scaled gradients: did a hand-written update use them?
        if isinstance(outputs, torch.Tensor):
            _check_loss(state, outputs)
        if isinstance(scaled, torch.Tensor):
            scaled._dtl_scaler = self  # its backward writes scaled gradients (see _hook_backward)
        return scaled

    def check_grads(scaler, optimizer):
        """What the scaler is about to unscale (fused optimizers unscale inside their step)."""
        info = _scaler_info(scaler)
        dtypes = _grad_dtypes(optimizer)
        optimizer_site = optimizer.__dict__.get("_dtl_origin")
        if optimizer_site and optimizer_site not in state.scaler_sites and len(state.scaler_sites) < 16:
            state.scaler_sites.append(optimizer_site)  # explains "Attempting to unscale FP16 gradients."
        origins = [site for site in (info.get("origin"), info.get("scale_site"), optimizer_site) if site]
        if torch.bfloat16 in dtypes:
            recorder.claim(
                "scaler-bf16-grads",
                ("DTL301",),
                "GradScaler unscaled bfloat16 gradients (on CUDA this raises "
                "'_amp_foreach_non_finite_check_and_unscale_cuda not implemented for BFloat16')",
                recorder.user_stack(),
                origins=origins,
                detail={"grad_dtypes": [_short(d) for d in dtypes]},
                key="scaler-bf16-grads",
            )
        elif (
            dtypes
            and all(d in (torch.float32, torch.float64) for d in dtypes)
            and torch.float16 not in state.autocast_dtypes_seen
        ):
            seen = sorted(_short(d) for d in state.autocast_dtypes_seen) or ["none"]
            recorder.claim(
                "scaler-without-fp16",
                ("DTL307", "DTL301"),
                f"GradScaler unscaled only {', '.join(_short(d) for d in dtypes)} gradients and no float16 "
                f"autocast ran (autocast dtypes seen: {', '.join(seen)}): the scaler protects nothing",
                recorder.user_stack(),
                origins=origins,
                detail={"grad_dtypes": [_short(d) for d in dtypes], "autocast_dtypes": seen},
                key="scaler-without-fp16",
            )

    def unscaled(self, optimizer):
        _scaler_info(self)["unscaled"].add(id(optimizer))
        state.scaled.clear(_params(optimizer))

    @functools.wraps(unscale_)
    def hooked_unscale(self, optimizer):
        if self.is_enabled():
            check_grads(self, optimizer)
            unscaled(self, optimizer)
        return unscale_(self, optimizer)

    @functools.wraps(step)
    def hooked_step(self, optimizer, *args, **kwargs):
        state.count_step(optimizer)
        if self.is_enabled() and id(optimizer) not in _scaler_info(self)["unscaled"]:
            check_grads(self, optimizer)
        state.in_scaler_step = True
        try:
            return step(self, optimizer, *args, **kwargs)
        finally:
            state.in_scaler_step = False
            if self.is_enabled():
                unscaled(self, optimizer)  # also when a subclass unscales without unscale_()

    @functools.wraps(update)
    def hooked_update(self, new_scale=None):
        info = _scaler_info(self)
        before = float(self.get_scale()) if self.is_enabled() and self._scale is not None else None
        try:
            return update(self, new_scale)
        finally:
            info["unscaled"] = set()
            if before is not None and new_scale is None:
                after = float(self.get_scale())
                # The scale backs off exactly when the step was skipped for inf/NaN gradients.
                skipped = after < before
                state.note_scaler_update(skipped, after)
                recorder.write({"kind": "scaler-update", "scale": before, "new_scale": after, "skipped": skipped,
                                "stack": recorder.user_stack(),
                                "origins": [site for site in (info.get("scale_site"), info.get("origin")) if site]})

    scaler_cls.__init__, scaler_cls.scale, scaler_cls.unscale_ = hooked_init, hooked_scale, hooked_unscale
    scaler_cls.step, scaler_cls.update = hooked_step, hooked_update


# -- optimizers ---------------------------------------------------------------------------------
# Parameter dtypes whose largest magnitude torch._foreach_norm gives exactly (it reaches float64
# values above float32's range as inf).
_FOREACH_CHECKED = (torch.float16, torch.bfloat16, torch.float32)


def _nonfinite_params(optimizer) -> list:
    """(parameter, group) pairs holding inf/NaN after a step: one fused max-magnitude pass and one
    sync for the usual dtypes, not two ops per parameter."""
    fused, single = [], []
    for group in optimizer.param_groups:
        for param in group["params"]:
            if not param.is_floating_point() or param.numel() == 0:
                continue
            fits = param.dtype in _FOREACH_CHECKED and param.layout == torch.strided
            (fused if fits else single).append((param, group))
    bad = []
    with torch.no_grad():
        if fused:
            largest = torch._foreach_norm([param for param, _group in fused], float("inf"), dtype=torch.float64)
            if not bool(torch.stack(largest).isfinite().all()):
                bad = [pair for pair, value in zip(fused, largest) if not bool(torch.isfinite(value))]
        bad += [(param, group) for param, group in single if not bool(torch.isfinite(param).all())]
    return bad


def _hook_optimizer(state: State) -> None:
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    recorder = state.recorder
    original_init = torch.optim.Optimizer.__init__

    @functools.wraps(original_init)
    def hooked_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.__dict__["_dtl_origin"] = recorder.site()
        silent.on_init(self)

    torch.optim.Optimizer.__init__ = hooked_init

    def pre_hook(optimizer, args, kwargs):
        if not state.in_scaler_step:
            state.count_step(optimizer)
        silent.before_step(state, optimizer)
        if state.in_scaler_step:
            return
        params = _params(optimizer)
        marks = state.scaled.live(params)
        if not marks:
            return
        state.scaled.clear(params)
        optimizer.__dict__["_dtl_bypassed"] = True
        stack = recorder.user_stack()
        if stack and stack[0] not in state.scaler_sites and len(state.scaler_sites) < 16:
            state.scaler_sites.append(stack[0])
        scale = marks[0].scale
        recorder.claim(
            "step-bypasses-scaler",
            ("DTL305",),
            f"{type(optimizer).__name__}.step() ran on gradients still multiplied by the loss scale {scale:g}, "
            f"not through scaler.step(): its update is {scale:g}x too large, with no inf/NaN skip",
            stack,
            origins=marks[0].origins,
            detail={"scale": scale, "optimizer": type(optimizer).__name__},
            key=("step-bypasses-scaler", id(optimizer)),
        )

    def post_hook(optimizer, args, kwargs):
        silent.after_step(state, optimizer)
        bad = _nonfinite_params(optimizer)
        if not bad:
            return
        param, group = bad[0]
        origin = optimizer.__dict__.get("_dtl_origin")
        if origin and origin not in state.nonfinite_origins:
            state.nonfinite_origins.append(origin)
        eps = group.get("eps")
        tiny = torch.finfo(param.dtype).tiny
        # The rule the run's own evidence points at: a step on still-scaled gradients, an eps that
        # vanishes in the parameters' dtype, half weights, float16 autocast with no loss scaling.
        if optimizer.__dict__.get("_dtl_bypassed"):
            code = "DTL305"
        elif isinstance(eps, float) and 0 < eps < tiny:
            code = "DTL404"
        elif param.dtype in LOW_PRECISION:
            code = "DTL401"
        elif torch.float16 in state.autocast_dtypes_seen and not any(s.is_enabled() for s in list(state.scalers)):
            code = "DTL208"
        else:
            code = None
        state.weights_broken = True
        recorder.claim(
            "nonfinite-params",
            ("DTL404", "DTL401", "DTL403", "DTL305", "DTL505", "DTL208", "DTL503"),
            f"{type(optimizer).__name__}.step() left {len(bad)} parameter tensor{'' if len(bad) == 1 else 's'} with inf/NaN "
            f"({_short(param.dtype)}" + (f", eps={eps:g}" if isinstance(eps, float) else "") + ")",
            recorder.user_stack(),
            origins=([origin] if origin else []) + state.origins(),
            detail={"dtype": _short(param.dtype), "eps": eps, "optimizer": type(optimizer).__name__},
            key=("nonfinite-params", id(optimizer)),
            code=code,
        )

    register_optimizer_step_pre_hook(pre_hook)
    register_optimizer_step_post_hook(post_hook)


# -- clipping -----------------------------------------------------------------------------------
def _hook_clipping(state: State) -> None:
    import torch.nn.utils as nn_utils
    import torch.nn.utils.clip_grad as clip_grad

    recorder = state.recorder
    original = clip_grad.clip_grad_norm_

    @functools.wraps(original)
    def clip_grad_norm_(parameters, max_norm, *args, **kwargs):
        if isinstance(parameters, torch.Tensor):
            parameters = [parameters]
        else:
            parameters = list(parameters)
        marks = state.scaled.live(parameters)
        norm = original(parameters, max_norm, *args, **kwargs)
        for mark in marks:
            mark.refresh()  # clipping scales the gradients in place: still the scaled ones
        seen = float(norm)
        if not math.isfinite(seen):
            return norm  # an overflow step the scaler will skip: evidence needs finite gradients
        if marks:
            scale = marks[0].scale
            recorder.claim(
                "clip-before-unscale",
                ("DTL303",),
                f"clip_grad_norm_ saw a total norm of {seen:.4g} on gradients still multiplied by the loss "
                f"scale {scale:g} (true norm about {seen / scale:.4g}); max_norm={max_norm} clipped scaled gradients",
                recorder.user_stack(),
                detail={"norm": seen, "scale": scale, "true_norm": seen / scale, "max_norm": float(max_norm)},
            )
        return norm

    clip_grad.clip_grad_norm_ = clip_grad_norm_
    nn_utils.clip_grad_norm_ = clip_grad_norm_


# -- backward -----------------------------------------------------------------------------------
def _hook_backward(state: State) -> None:
    recorder = state.recorder
    original = torch.Tensor.backward

    @functools.wraps(original)
    def backward(self, *args, **kwargs):
        if state.in_backward:
            # torch dispatches Tensor.backward once more through the observer's mode: checked once
            return original(self, *args, **kwargs)
        state.in_backward = True
        try:
            return checked_backward(self, args, kwargs)
        finally:
            state.in_backward = False

    def checked_backward(self, args, kwargs):
        if torch.is_autocast_enabled("cpu") or torch.is_autocast_enabled("cuda"):
            stack = recorder.user_stack()
            if stack:
                recorder.claim(
                    "backward-in-autocast",
                    ("DTL204",),
                    "backward() ran with autocast still enabled",
                    stack,
                )
        scaler = getattr(self, "_dtl_scaler", None)
        if scaler is None:
            return original(self, *args, **kwargs)
        prepared = state.scaled.before_backward(self)
        check_nan = torch.is_anomaly_check_nan_enabled()
        if check_nan:
            # A scaled loss: inf/NaN gradients are the GradScaler's to find and skip, not an error.
            torch.set_anomaly_enabled(True, False)
        try:
            result = original(self, *args, **kwargs)
        finally:
            if check_nan:
                torch.set_anomaly_enabled(True, True)
        info = _scaler_info(scaler)
        origins = [site for site in (info.get("scale_site"), info.get("origin")) if site]
        state.scaled.after_backward(prepared, float(scaler.get_scale()), origins)
        return result

    torch.Tensor.backward = backward


# -- casts and global dtype state ---------------------------------------------------------------
def _hook_casts(state: State) -> None:
    recorder = state.recorder
    module = torch.nn.Module

    def hook(name, fixed_dtype):
        original = getattr(module, name)

        @functools.wraps(original)
        def cast(self, *args, **kwargs):
            dtype = fixed_dtype or _dtype_in(args, kwargs)
            if dtype is not None and dtype.is_floating_point:
                site = recorder.site()
                state.note_origin(state.module_casts, site, _short(dtype))
                if site is not None:
                    state.note_param_casts(self.parameters(), site)
            return original(self, *args, **kwargs)

        setattr(module, name, cast)

    for name, dtype in (("half", torch.float16), ("bfloat16", torch.bfloat16), ("float", torch.float32),
                        ("double", torch.float64), ("to", None), ("type", None)):
        hook(name, dtype)

    original_set_default = torch.set_default_dtype

    @functools.wraps(original_set_default)
    def set_default_dtype(dtype):
        if dtype in LOW_PRECISION:
            state.note_origin(state.default_dtype_sites, recorder.site(), _short(dtype))
        return original_set_default(dtype)

    torch.set_default_dtype = set_default_dtype
    original_set_tensor_type = torch.set_default_tensor_type

    @functools.wraps(original_set_tensor_type)
    def set_default_tensor_type(kind):
        if "Half" in str(kind) or "BFloat16" in str(kind):
            state.note_origin(state.default_dtype_sites, recorder.site(), str(kind))
        return original_set_tensor_type(kind)

    torch.set_default_tensor_type = set_default_tensor_type


def _hook_anomaly(state: State) -> None:
    recorder = state.recorder
    autograd = torch.autograd
    original_set = autograd.set_detect_anomaly
    original_detect_init = autograd.detect_anomaly.__init__

    def claim():
        stack = recorder.user_stack(sys._getframe(2))
        if stack:
            recorder.claim(
                "anomaly-mode-enabled",
                ("DTL705",),
                "the program itself turned on autograd anomaly detection (every backward pays for it)",
                stack,
            )

    class set_detect_anomaly(original_set):  # a class in torch: keep it usable as a context manager
        def __init__(self, mode, check_nan=True):
            if mode:
                claim()
            super().__init__(mode, check_nan)

    def detect_init(self, *args, **kwargs):
        claim()
        original_detect_init(self, *args, **kwargs)

    autograd.set_detect_anomaly = set_detect_anomaly
    autograd.detect_anomaly.__init__ = detect_init


# -- torch.distributed --------------------------------------------------------------------------
def _hook_collectives(state: State) -> None:
    try:
        import torch.distributed as dist
    except ImportError:
        return
    if not dist.is_available():
        return
    recorder = state.recorder
    counter = [0]

    def hook(name):
        original = getattr(dist, name, None)
        if original is None:
            return

        @functools.wraps(original)
        def collective(*args, **kwargs):
            counter[0] += 1
            if counter[0] <= MAX_COLLECTIVES:
                tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
                for value in (*args, *kwargs.values()):
                    if isinstance(value, (list, tuple)):
                        tensors.extend(v for v in value if isinstance(v, torch.Tensor))
                recorder.write(
                    {
                        "kind": "collective",
                        "seq": counter[0],
                        "op": name,
                        "dtypes": [_short(t.dtype) for t in tensors],
                        "shapes": [list(t.shape) for t in tensors],
                        "site": recorder.site(),
                        "stack": recorder.user_stack(),
                    }
                )
            return original(*args, **kwargs)

        setattr(dist, name, collective)

    _hook_ddp(state)
    for name in ("all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
                 "reduce_scatter_tensor", "reduce", "all_to_all_single", "gather", "scatter"):
        hook(name)


def _hook_ddp(state: State) -> None:
    """Each rank records its parameter and buffer dtypes as DDP wraps the model; confirm compares
    them across ranks afterwards (DDP's own check only fails later, on one rank, in gloo terms)."""
    from torch.nn.parallel import DistributedDataParallel

    recorder = state.recorder
    original = DistributedDataParallel.__init__

    @functools.wraps(original)
    def ddp_init(self, module, *args, **kwargs):
        tensors = [(f"param {name}", t) for name, t in module.named_parameters()]
        tensors += [(f"buffer {name}", t) for name, t in module.named_buffers()]
        recorder.write(
            {
                "kind": "ddp-params",
                "dtypes": [[name, _short(tensor.dtype)] for name, tensor in tensors[:MAX_DDP_TENSORS]],
                "stack": recorder.user_stack(),
            }
        )
        return original(self, module, *args, **kwargs)

    DistributedDataParallel.__init__ = ddp_init


# -- warnings, exceptions, signals --------------------------------------------------------------
def _hook_warnings(state: State) -> None:
    recorder = state.recorder
    original = warnings.showwarning
    # torch's C++ deprecations (``torch.get_autocast_gpu_dtype()``, DTL210) are DeprecationWarnings,
    # which Python hides by default: show them once per call site.
    warnings.filterwarnings("default", message=r"torch\.\w*autocast\w*\(", category=DeprecationWarning)

    def showwarning(message, category, filename, lineno, file=None, line=None):
        family = messages.classify(str(message), messages.WARNING_FAMILIES)
        if family is not None:
            path = recorder.user_path(filename)
            stack = [[path, lineno]] if path else recorder.user_stack()
            recorder.claim(
                family.name,
                family.codes,
                f"{category.__name__}: {str(message).strip()}",
                stack,
                detail={"family": family.label},
            )
        return original(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning


def record_exception(state: State, error: BaseException) -> None:
    recorder = state.recorder
    text = f"{type(error).__name__}: {error}".strip()
    first_line = text.splitlines()[0][:500] if text else type(error).__name__
    stack = recorder.traceback_stack(error.__traceback__)
    family = messages.classify(text)
    if family is None:
        recorder.write({"kind": "exception", "message": first_line, "stack": stack})
        return
    origins = state.origins()
    if family.name in ("scaler-state", "unscale-fp16"):
        origins = origins + state.scaler_sites
    elif family.name == "anomaly-nan":
        origins = origins + state.nonfinite_origins
    recorder.claim(
        family.name,
        family.codes,
        first_line,
        stack,
        origins=origins,
        detail={"family": family.label, "exception": type(error).__name__},
        key=("exception", first_line),
        code=messages.primary_code(family, text),
    )


_COMPANION_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _without_companion(tb):
    """The traceback minus the frames of dtype-lint's own wrappers (hooks, observer, emulation)."""
    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_COMPANION_DIR):
            kept.append((tb.tb_frame, tb.tb_lasti, tb.tb_lineno))
        tb = tb.tb_next
    cleaned = None
    for frame, lasti, lineno in reversed(kept):
        cleaned = types.TracebackType(cleaned, frame, lasti, lineno)
    return cleaned


def hide_companion_frames(error: BaseException, tb):
    """The user's traceback reads as it would without confirm (chained exceptions too)."""
    seen = set()
    link = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if link.__traceback__ is not None:
            link.__traceback__ = _without_companion(link.__traceback__)
        link = link.__cause__ or link.__context__
    return _without_companion(tb) if tb is not None else None


def _hook_exceptions(state: State) -> None:
    original = sys.excepthook

    def excepthook(kind, error, tb):
        try:
            record_exception(state, error)
        except Exception:  # noqa: BLE001 - the user's traceback matters more than ours
            pass
        try:
            tb = hide_companion_frames(error, tb)
        except Exception:  # noqa: BLE001
            pass
        original(kind, error, tb)

    sys.excepthook = excepthook
    original_thread_hook = threading.excepthook

    def thread_excepthook(args):
        try:
            if args.exc_value is not None:
                record_exception(state, args.exc_value)
        except Exception:  # noqa: BLE001
            pass
        original_thread_hook(args)

    threading.excepthook = thread_excepthook


def _hook_signals(state: State) -> None:
    if threading.current_thread() is not threading.main_thread():
        return

    def on_term(signum, frame):
        state.end()
        state.recorder.write({"kind": "terminated", "signal": signal.Signals(signum).name})
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, on_term)
    except (ValueError, OSError):
        pass

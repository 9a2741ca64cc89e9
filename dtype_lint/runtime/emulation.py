"""Run CUDA-written programs on the CPU: answer torch.cuda's questions, map CUDA AMP to CPU AMP.

Tensor-level device mapping (``device="cuda"``, ``.cuda()``, ``.to("cuda")``) happens in the
observer's TorchFunctionMode (``map_cuda_call``); this module patches the module-level APIs.
The answers describe one Ampere-class device, so scripts take their usual bf16-capable path.
"""

from __future__ import annotations

import contextlib
import time
import types
import warnings

import torch

from dtype_lint.runtime.state import State

DEVICE_NAME = "dtype-lint CPU emulation of CUDA"
CAPABILITY = (8, 0)

# Ops CUDA autocast runs in float32 (AMP docs); CPU autocast leaves several of them in low
# precision, so the emulation upcasts them itself to behave like the GPU would.
CUDA_FP32_OPS = frozenset(
    {
        "__pow__", "__rpow__", "__rtruediv__", "__rdiv__", "acos", "asin", "cosh", "sinh", "tan", "erfinv",
        "exp", "expm1", "log", "log10", "log1p", "log2", "pow", "reciprocal", "rsqrt", "softmax", "log_softmax",
        "softmin", "softplus", "sum", "prod", "cumsum", "cumprod", "norm", "normalize", "dist", "cdist", "pdist",
        "renorm", "layer_norm", "group_norm", "cosine_similarity", "cross_entropy", "nll_loss", "mse_loss",
        "l1_loss", "smooth_l1_loss", "kl_div", "binary_cross_entropy_with_logits", "poisson_nll_loss",
        "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss", "hinge_embedding_loss",
    }
)
LOW_PRECISION = (torch.float16, torch.bfloat16)
# CUDA autocast refuses these outright (CPU autocast runs them in float32): the emulation raises
# what the GPU would, word for word.
CUDA_AUTOCAST_ERRORS = {
    "binary_cross_entropy": (
        "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
        "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
        "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
        "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
        "safe to autocast."
    ),
}


def is_cuda(value) -> bool:
    if isinstance(value, str):
        return value == "cuda" or value.startswith("cuda:")
    if isinstance(value, torch.device):
        return value.type == "cuda"
    return False


def _cpu(value):
    return "cpu" if is_cuda(value) else value


_NOT_HANDLED = object()


def map_cuda_call(name: str, args: tuple, kwargs: dict, state: State | None = None):
    """(args, kwargs, shortcut) with CUDA devices mapped to the CPU; shortcut replaces the call."""
    if name == "cuda" and args and isinstance(args[0], torch.Tensor):
        if state is not None:
            state.note_cuda_used()
        return args, kwargs, args[0]
    if name == "pin_memory" and args:
        return args, kwargs, args[0]
    if "device" in kwargs and is_cuda(kwargs["device"]):
        kwargs = dict(kwargs, device="cpu")
        if state is not None:
            state.note_cuda_used()
    if name == "to" and len(args) > 1:
        target = args[1]
        if is_cuda(target) or (isinstance(target, int) and not isinstance(target, bool)):
            args = (args[0], "cpu", *args[2:])
            if state is not None:
                state.note_cuda_used()
    return args, kwargs, _NOT_HANDLED


def upcast_for_cuda_policy(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    def up(value):
        if isinstance(value, torch.Tensor) and value.dtype in LOW_PRECISION:
            return value.float()
        return value

    return tuple(up(a) for a in args), {k: up(v) for k, v in kwargs.items()}


def _properties():
    return types.SimpleNamespace(
        name=DEVICE_NAME,
        major=CAPABILITY[0],
        minor=CAPABILITY[1],
        total_memory=80 * 2**30,
        multi_processor_count=108,
        is_integrated=False,
    )


class _Event:
    """torch.cuda.Event on the CPU: wall-clock timing, everything already synchronised."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._time = None

    def record(self, stream=None):
        self._time = time.perf_counter()

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def elapsed_time(self, end_event):
        return 1000.0 * ((end_event._time or 0.0) - (self._time or 0.0))


class _Stream:
    """torch.cuda.Stream on the CPU: work is already in order."""

    def __init__(self, device=None, priority=0, **kwargs):
        pass

    def synchronize(self):
        pass

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record()
        return event

    def query(self):
        return True


def install(state: State) -> None:
    cuda = torch.cuda
    answers = {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device=None: None,
        "synchronize": lambda device=None: None,
        "empty_cache": lambda: None,
        "is_bf16_supported": lambda including_emulation=True: True,
        "get_device_capability": lambda device=None: CAPABILITY,
        "get_device_name": lambda device=None: DEVICE_NAME,
        "get_device_properties": lambda device=None: _properties(),
        "manual_seed": lambda seed: None,
        "manual_seed_all": lambda seed: None,
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "max_memory_reserved": lambda device=None: 0,
        "reset_peak_memory_stats": lambda device=None: None,
        "ipc_collect": lambda: None,
    }
    for name, answer in answers.items():
        setattr(cuda, name, answer)
    default_stream = _Stream()
    cuda.Event, cuda.Stream = _Event, _Stream
    cuda.current_stream = cuda.default_stream = lambda device=None: default_stream
    cuda.stream = lambda stream=None: contextlib.nullcontext(stream)
    cuda.device = lambda device=None: contextlib.nullcontext()
    torch.Tensor.pin_memory = lambda self, *args, **kwargs: self
    torch.Tensor.is_pinned = lambda self, *args, **kwargs: False
    # A CUDA build with no driver raises "Found no NVIDIA driver" from anything that reaches the
    # driver (stream capture checks in Adam/AdamW/Adadelta.step, the pin-memory thread's device
    # index); a CPU build answers "no accelerator", so accelerate/transformers take their CPU path.
    # Both must see the one emulated CUDA device instead.
    cuda.is_current_stream_capturing = lambda: False
    _patch_accelerator(default_stream)
    _patch_autocast(state)
    _patch_autocast_queries(state)
    _patch_grad_scaler(state)
    _patch_distributed()
    _patch_data_parallel()


def _patch_accelerator(stream) -> None:
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None:  # torch < 2.6
        return
    stream.is_capturing = lambda: False
    answers = {
        "current_accelerator": lambda check_available=False: torch.device("cuda"),
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device_index": lambda: 0,
        "current_device_idx": lambda: 0,
        "set_device_index": lambda device=None: None,
        "set_device_idx": lambda device=None: None,
        "current_stream": lambda device=None: stream,
        "set_stream": lambda stream=None: None,
        "synchronize": lambda device=None: None,
        "device_index": lambda device=None: contextlib.nullcontext(),
        "empty_cache": lambda: None,
    }
    for name, answer in answers.items():
        if hasattr(accelerator, name):
            setattr(accelerator, name, answer)


def _patch_data_parallel() -> None:
    """nn.DataParallel over the one emulated device: the module itself (as PyTorch does with no GPU)."""
    from torch.nn.parallel import DataParallel

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        torch.nn.Module.__init__(self)
        self.module, self.device_ids, self.dim = module, [], dim
        self.output_device, self.src_device_obj = None, torch.device("cpu")

    DataParallel.__init__ = __init__


def _patch_autocast_queries(state: State) -> None:
    """``torch.is_autocast_enabled()`` (CUDA by default) answers for the emulated CUDA autocast."""
    original_enabled, original_dtype = torch.is_autocast_enabled, torch.get_autocast_dtype

    def is_autocast_enabled(device_type=None):
        if device_type in (None, "cuda"):
            return state.cuda_autocast_depth > 0 and original_enabled("cpu")
        return original_enabled(device_type)

    def get_autocast_dtype(device_type):
        if device_type == "cuda" and state.cuda_autocast_depth > 0:
            return original_dtype("cpu")
        return original_dtype(device_type)

    torch.is_autocast_enabled = is_autocast_enabled
    torch.get_autocast_dtype = get_autocast_dtype
    def get_autocast_gpu_dtype():
        # Deprecated since torch 2.4 (DTL210): the emulation warns as the real function does.
        warnings.warn(
            "torch.get_autocast_gpu_dtype() is deprecated. Please use torch.get_autocast_dtype('cuda') instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return get_autocast_dtype("cuda")

    torch.get_autocast_gpu_dtype = get_autocast_gpu_dtype


def _patch_autocast(state: State) -> None:
    autocast = torch.amp.autocast_mode.autocast
    original_init, original_enter, original_exit = autocast.__init__, autocast.__enter__, autocast.__exit__

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self._dtl_emulated = device_type == "cuda"
        if self._dtl_emulated:
            state.note_cuda_used()
            device_type = "cpu"
            dtype = torch.float16 if dtype is None else dtype  # CUDA's default autocast dtype
        original_init(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def __enter__(self):
        result = original_enter(self)
        if getattr(self, "_dtl_emulated", False):
            state.cuda_autocast_depth += 1
        return result

    def __exit__(self, *exc):
        if getattr(self, "_dtl_emulated", False):
            state.cuda_autocast_depth -= 1
        return original_exit(self, *exc)

    autocast.__init__, autocast.__enter__, autocast.__exit__ = __init__, __enter__, __exit__


def _patch_grad_scaler(state: State) -> None:
    """A CUDA GradScaler runs on the CPU, enabled as asked, once the program uses CUDA.

    torch disables a CUDA GradScaler when CUDA is not there ("GradScaler is enabled, but CUDA is
    not available.  Disabling."): a program that never touches CUDA (nanoGPT's ``--device=cpu``)
    trains without loss scaling on a CPU-only machine, and must under the emulation too. Whether
    it used CUDA is known at its first ``scale()``, not at construction (accelerate builds its
    scaler before it moves the model).
    """
    scaler = torch.amp.grad_scaler.GradScaler
    original_init, original_scale = scaler.__init__, scaler.scale

    def __init__(self, device="cuda", *args, **kwargs):
        self._dtl_cuda_unsettled = is_cuda(device)
        original_init(self, _cpu(device), *args, **kwargs)

    def scale(self, outputs):
        if self.__dict__.pop("_dtl_cuda_unsettled", False) and self._enabled and not state.cuda_used:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=3)  # torch's own words, at the user's line (through hooks.py)
            self._enabled = False
        return original_scale(self, outputs)

    scaler.__init__, scaler.scale = __init__, scale


def _patch_distributed() -> None:
    try:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:
        return
    if not dist.is_available():
        return
    original_init_pg = dist.init_process_group

    def init_process_group(backend=None, *args, **kwargs):
        if backend is None or "nccl" in str(backend):
            backend = "gloo"
        kwargs.pop("device_id", None)
        return original_init_pg(backend, *args, **kwargs)

    dist.init_process_group = init_process_group
    original_ddp_init = DistributedDataParallel.__init__

    def ddp_init(self, module, device_ids=None, output_device=None, *args, **kwargs):
        original_ddp_init(self, module, None, None, *args, **kwargs)

    DistributedDataParallel.__init__ = ddp_init

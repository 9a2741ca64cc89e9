"""Made a sitecustomize by the test: the CPU build of torch behaves as a CUDA build of torch does
on a machine with no NVIDIA driver (what `pip install torch` gives on a Linux box without a GPU).

Only the compiled entry points change: a CUDA build reports "cuda" as its accelerator at compile
time, answers device_count() with 0, and raises this error from everything that initialises
CUDA (torch.cuda._lazy_init, streams, device indices, stream-capture checks).
"""
import torch

NO_DRIVER = (
    "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
    "driver from http://www.nvidia.com/Download/index.aspx"
)


def _no_driver(*args, **kwargs):
    raise RuntimeError(NO_DRIVER)


torch._C._accelerator_getAccelerator = lambda: torch.device("cuda")
for _name in ("_accelerator_getDeviceIndex", "_accelerator_setDeviceIndex", "_accelerator_getStream",
              "_accelerator_setStream", "_accelerator_synchronizeDevice", "_accelerator_exchangeDevice",
              "_accelerator_maybeExchangeDevice", "_cuda_isCurrentStreamCapturing"):
    setattr(torch._C, _name, _no_driver)
torch.cuda._lazy_init = _no_driver
torch.cuda.is_current_stream_capturing = _no_driver
torch.cuda.device_count = lambda: 0

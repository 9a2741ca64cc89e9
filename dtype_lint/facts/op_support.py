"""Ops with no float16/bfloat16 kernel: what DTL509 asks, answered by torch's generated
semantics (dtype_lint/facts/semantics.py) for the file's ``target-torch``.

A gap is read from the data, not written here: on CPU, a dtype torch's op database does not
claim *and* whose run raised when the data was generated (torch 2.13: ``linalg.svd``,
``fft.rfft``, ``quantile``, ``cdist``...; CPU Half ``sum`` and bfloat16 ``nearest``
interpolation run, so they are no gap); on CUDA, a dtype the op database does not claim for an
Ampere-or-later GPU (cuSOLVER has no half factorizations; cuFFT no bfloat16). Regenerating the
data for another torch moves the gaps with it (tools/gen_torch_semantics.py).
"""

from __future__ import annotations

import dataclasses

from dtype_lint.facts import semantics
from dtype_lint.facts.flow.values import BF16, FP16

LOW = (FP16, BF16)
# A size condition the dtype data cannot hold: cuFFT computes float16 only for power-of-two
# sizes (torch.fft docs; pytorch/pytorch#70664), so a float16 FFT raises on CUDA too for others.
_POWER_OF_TWO_ONLY = ("torch.fft.", "torch.stft", "torch.istft", "Tensor.stft", "Tensor.istft")


@dataclasses.dataclass(frozen=True)
class Gap:
    """``op`` has no ``dtype`` kernel on CPU (``cpu``) and/or CUDA (``cuda``; None: unknown)."""

    op: str
    dtype: str
    cpu: bool
    cuda: bool | None
    error: str | None  # torch's CPU error, as recorded
    sizes: bool = False  # CUDA has the kernel for power-of-two sizes only (cuFFT float16)

    @property
    def everywhere(self) -> bool:
        return self.cpu and (self.cuda is True or self.sizes)

    @property
    def where(self) -> str:
        if self.sizes:
            return "on CPU, and on CUDA for sizes that are not powers of two,"
        if self.everywhere:
            return "on CPU and CUDA"
        return "on CPU" if self.cpu else "on CUDA"


def gap(data: semantics.Semantics, op: str, dtype: str) -> Gap | None:
    """The gap of ``op`` (a data name: ``torch.linalg.svd``, ``Tensor.svd``) for ``dtype``, or None."""
    cpu = data.kernel_missing(op, dtype, "cpu")
    cuda = data.kernel_missing(op, dtype, "cuda")
    if not cpu and not cuda:
        return None
    sizes = bool(cpu) and cuda is False and dtype == FP16 and op.startswith(_POWER_OF_TWO_ONLY)
    return Gap(op=op, dtype=dtype, cpu=bool(cpu), cuda=cuda, error=data.kernel_error(op), sizes=sizes)


def low_gaps(data: semantics.Semantics, op: str) -> tuple[Gap, ...]:
    """The float16 and bfloat16 gaps of ``op``: those a float kernel exists for (an op that
    takes no floats at all, ``bitwise_and``, is another matter than precision)."""
    if data.kernel_missing(op, "fp32", "cpu") or data.kernel_missing(op, "fp64", "cpu"):
        return ()
    return tuple(found for found in (gap(data, op, dtype) for dtype in LOW) if found is not None)

"""Ops that have no float16/bfloat16 kernel: the table DTL509 reads, kept as data.

Each entry names the op's public spellings, the low-precision dtypes it rejects, where (``cpu``
or ``all``: CPU and CUDA), the error torch raises, a probe (a Python expression over a square
float16/bfloat16 matrix ``x``) and the public report it comes from. tests/test_op_support.py
runs every probe on the installed torch (2.13, CPU) and checks the recorded error, so an entry
that stops raising fails the suite instead of going stale.

Sources: the op's own error text (probes), PyTorch issues and docs cited per entry; cuSOLVER and
MAGMA have no half-precision factorizations, so linear algebra raises on CUDA too
(pytorch/pytorch#98308, NVIDIA/apex#887); cuFFT runs float16 only for power-of-two sizes and
bfloat16 not at all (pytorch/pytorch#70664, #117844).
"""

from __future__ import annotations

import dataclasses

from dtype_lint.facts.flow.values import BF16, FP16

ALL, CPU = "all", "cpu"


@dataclasses.dataclass(frozen=True)
class UnsupportedOp:
    names: tuple[str, ...]  # qualified spellings (torch.linalg.svd) and bare method names (svd)
    dtypes: tuple[str, ...]  # the low-precision dtypes it rejects
    where: str  # ALL: CPU and CUDA raise; CPU: CUDA has a kernel (or autocast runs it in float32)
    error: str  # a substring of the error torch 2.13 raises on CPU
    probe: str  # expression over a 4x4 low-precision matrix ``x`` (and ``torch``) that raises
    source: str  # the public report or doc behind the entry
    methods: tuple[str, ...] = ()  # Tensor method spellings (x.svd())


_FFT = tuple(
    f"torch.fft.{name}"
    for name in (
        "fft ifft rfft irfft hfft ihfft fft2 ifft2 rfft2 irfft2 hfft2 ihfft2 fftn ifftn rfftn irfftn hfftn ihfftn"
    ).split()
)

UNSUPPORTED_OPS: tuple[UnsupportedOp, ...] = (
    UnsupportedOp(
        _FFT, (FP16, BF16), ALL, "Unsupported dtype", "torch.fft.rfft2(x)",
        "pytorch/pytorch#70664 (rfft2 under amp), pytorch/pytorch#117844 (rfft bfloat16); CUDA float16: powers of two only",
    ),
    UnsupportedOp(
        ("torch.stft", "torch.istft"), (FP16, BF16), ALL, "doesn't support tensors of type",
        "torch.stft(x.flatten(), 4, return_complex=True)", "pytorch/pytorch#70664 (the spectral ops share the FFT backends)",
        methods=("stft",),
    ),
    UnsupportedOp(
        ("torch.linalg.svd", "torch.linalg.svdvals", "torch.svd"), (FP16, BF16), ALL, "not implemented for",
        "torch.linalg.svd(x)", "pytorch/pytorch#98308, NVIDIA/apex#887, arcee-ai/mergekit#304", methods=("svd",),
    ),
    UnsupportedOp(
        ("torch.linalg.eigh", "torch.linalg.eigvalsh", "torch.linalg.eig", "torch.linalg.eigvals"),
        (FP16, BF16), ALL, "not implemented for", "torch.linalg.eigh(x)", "pytorch/pytorch#98308 (cuSOLVER has no half types)",
    ),
    UnsupportedOp(
        ("torch.linalg.cholesky", "torch.linalg.cholesky_ex", "torch.cholesky"), (FP16, BF16), ALL,
        "not implemented for", "torch.linalg.cholesky(x)", "pytorch/pytorch#98308 (cuSOLVER has no half types)",
        methods=("cholesky",),
    ),
    UnsupportedOp(
        ("torch.linalg.qr", "torch.qr", "torch.geqrf", "torch.linalg.householder_product", "torch.orgqr"),
        (FP16, BF16), ALL, "not implemented for", "torch.linalg.qr(x)",
        "pytorch/pytorch#9315 (nn.init.orthogonal_ on a half parameter)", methods=("qr",),
    ),
    UnsupportedOp(
        ("torch.linalg.solve", "torch.linalg.solve_ex", "torch.linalg.lu", "torch.linalg.lu_factor",
         "torch.linalg.det", "torch.det", "torch.linalg.solve_triangular"),
        (FP16, BF16), ALL, "not implemented for", "torch.linalg.solve(x, x)", "pytorch/pytorch#98308 (LU in cuSOLVER/MAGMA)",
        methods=("det",),
    ),
    UnsupportedOp(
        ("torch.linalg.inv", "torch.linalg.inv_ex", "torch.inverse", "torch.logdet", "torch.linalg.slogdet", "torch.slogdet"),
        (FP16, BF16), ALL, "Low precision dtypes not supported", "torch.linalg.inv(x)",
        "the op's own check (torch/_linalg_utils / linalg.inv: 'Low precision dtypes not supported')",
        methods=("inverse", "logdet", "slogdet"),
    ),
    UnsupportedOp(
        ("torch.linalg.lstsq", "torch.linalg.matrix_rank", "torch.linalg.pinv", "torch.pinverse"),
        (FP16, BF16), ALL, "float", "torch.linalg.lstsq(x, x)",
        "the op's own check ('doesn't handle types other than float and double')", methods=("pinverse",),
    ),
    UnsupportedOp(
        ("torch.quantile", "torch.nanquantile"), (FP16, BF16), ALL, "must be either float or double",
        "torch.quantile(x, 0.5)", "torch.quantile docs ('input: float or double'); the op's own check",
        methods=("quantile", "nanquantile"),
    ),
    UnsupportedOp(
        ("torch.polar",), (FP16, BF16), ALL, "", "torch.polar(x, x)",
        "the op's own checks ('polar_cpu' not implemented for 'Half'; bfloat16 has no complex type)",
    ),
    UnsupportedOp(
        ("torch.complex", "torch.view_as_complex"), (BF16,), ALL, "", "torch.complex(x, x)",
        "pytorch/pytorch#117844 (no complex bfloat16 dtype)",
    ),
    UnsupportedOp(
        ("torch.cdist", "torch.nn.functional.pdist", "torch.pdist"), (FP16, BF16), CPU, "not implemented for",
        "torch.cdist(x, x)", "the CPU kernel's dispatch ('\"cdist\" not implemented for 'Half''); CUDA autocast runs cdist in float32 (amp docs)",
    ),
    UnsupportedOp(
        ("torch.nn.functional.ctc_loss",), (FP16, BF16), CPU, "not implemented for",
        "torch.nn.functional.ctc_loss(x.log_softmax(-1)[:, None].expand(4, 1, 4), torch.tensor([[1]]), torch.tensor([4]), torch.tensor([1]))",
        "the CPU kernel's dispatch ('\"ctc_loss_cpu\" not implemented for 'Half'')",
    ),
    UnsupportedOp(
        ("torch.histogram", "torch.histogramdd"), (FP16, BF16), CPU, "not implemented for", "torch.histogram(x)",
        "the CPU kernel's dispatch ('\"histogramdd\" not implemented for 'Half''); torch.histogram has no CUDA kernel",
    ),
)

BY_QUALIFIED: dict[str, UnsupportedOp] = {name: op for op in UNSUPPORTED_OPS for name in op.names}
BY_METHOD: dict[str, UnsupportedOp] = {name: op for op in UNSUPPORTED_OPS for name in op.methods}
# Last components, for the prefilter (a file must mention one of these words).
OP_WORDS: tuple[str, ...] = tuple(sorted({name.rsplit(".", 1)[-1] for name in BY_QUALIFIED} | set(BY_METHOD)))

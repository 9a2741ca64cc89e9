# realbugs-case: bug | family: 1 | shape: 2 | twin: diffusers_freeu_fftn_bf16_fixed
# source: https://github.com/huggingface/diffusers/pull/10125
# report: FreeU with a bfloat16 pipeline: fftn(x) in fourier_filter -> RuntimeError: Unsupported dtype BFloat16
import torch
from torch.fft import fftn, fftshift, ifftn, ifftshift


def fourier_filter(x_in: torch.Tensor, threshold: int, scale: int) -> torch.Tensor:
    x = x_in
    B, C, H, W = x.shape
    if (W & (W - 1)) != 0 or (H & (H - 1)) != 0:
        x = x.to(dtype=torch.float32)
    x_freq = fftn(x, dim=(-2, -1))  # realbug: s2 f1
    x_freq = fftshift(x_freq, dim=(-2, -1))
    mask = torch.ones((B, C, H, W), device=x.device)
    crow, ccol = H // 2, W // 2
    mask[..., crow - threshold : crow + threshold, ccol - threshold : ccol + threshold] = scale
    x_freq = x_freq * mask
    x_filtered = ifftn(ifftshift(x_freq, dim=(-2, -1)), dim=(-2, -1)).real
    return x_filtered.to(dtype=x_in.dtype)

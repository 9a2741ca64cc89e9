# realbugs-case: twin | family: 1 | shape: 2 | twin_of: diffusers_freeu_fftn_bf16
# source: https://github.com/huggingface/diffusers/pull/10125
import torch
from torch.fft import fftn, fftshift, ifftn, ifftshift


def fourier_filter(x_in: torch.Tensor, threshold: int, scale: int) -> torch.Tensor:
    x = x_in
    B, C, H, W = x.shape
    if (W & (W - 1)) != 0 or (H & (H - 1)) != 0:
        x = x.to(dtype=torch.float32)
    elif x.dtype == torch.bfloat16:
        x = x.to(dtype=torch.float32)
    x_freq = fftn(x, dim=(-2, -1))
    x_freq = fftshift(x_freq, dim=(-2, -1))
    mask = torch.ones((B, C, H, W), device=x.device)
    crow, ccol = H // 2, W // 2
    mask[..., crow - threshold : crow + threshold, ccol - threshold : ccol + threshold] = scale
    x_freq = x_freq * mask
    x_filtered = ifftn(ifftshift(x_freq, dim=(-2, -1)), dim=(-2, -1)).real
    return x_filtered.to(dtype=x_in.dtype)

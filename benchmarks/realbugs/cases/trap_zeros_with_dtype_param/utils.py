# realbugs-case: trap | family: - | shape: 1
# source: https://github.com/AUTOMATIC1111/stable-diffusion-webui/pull/498
# looks like: library code creating a buffer for a tensor of any dtype; it passes dtype=
import torch


def pad_mask(mask: torch.Tensor, length: int) -> torch.Tensor:
    pad = torch.zeros(mask.shape[0], length - mask.shape[1], dtype=mask.dtype, device=mask.device)
    return torch.cat([mask, pad], dim=1)


def empty_like_output(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.zeros(q.shape[0], q.shape[1], v.shape[2], device=q.device, dtype=q.dtype)

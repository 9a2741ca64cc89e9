# realbugs-case: trap | family: - | shape: 1
# source: https://github.com/tenstorrent/tt-xla/pull/4574
# looks like: torch.zeros without dtype joined to a parameter tensor; the parameter is an int64 index tensor and zeros(..., dtype=torch.long) matches it
import torch


def pad_ids(ids: torch.Tensor, length: int, pad_id: int = 0) -> torch.Tensor:
    pad = torch.full((ids.shape[0], length - ids.shape[1]), pad_id, dtype=torch.long, device=ids.device)
    return torch.cat([ids, pad], dim=1)


def pad_attention(mask: torch.Tensor, length: int) -> torch.Tensor:
    return torch.cat([mask, torch.zeros(mask.shape[0], length - mask.shape[1], dtype=torch.long)], dim=1)

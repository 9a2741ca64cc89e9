# realbugs-case: trap | family: - | shape: 6
# source: https://github.com/ultralytics/ultralytics/issues/15782
# looks like: uint8 masks multiplied and summed; they are converted to float first
import torch


def mask_iou(mask1: torch.Tensor, mask2: torch.Tensor, eps: float = 1e-7) -> torch.Tensor:
    m1, m2 = mask1.float(), mask2.float()
    intersection = m1 @ m2.T
    union = m1.sum(1)[:, None] + m2.sum(1)[None] - intersection
    return intersection / (union + eps)


print(mask_iou(torch.ones(2, 300, dtype=torch.uint8), torch.ones(3, 300, dtype=torch.uint8)))

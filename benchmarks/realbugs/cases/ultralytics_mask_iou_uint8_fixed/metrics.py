# realbugs-case: twin | family: 3 | shape: 6 | twin_of: ultralytics_mask_iou_uint8
# source: https://github.com/ultralytics/ultralytics/pull/15808
import torch


def mask_iou(mask1, mask2, eps=1e-7):
    intersection = torch.matmul(mask1.float(), mask2.float().T).clamp_(0)
    union = (mask1.sum(1)[:, None] + mask2.sum(1)[None]) - intersection
    return intersection / (union + eps)

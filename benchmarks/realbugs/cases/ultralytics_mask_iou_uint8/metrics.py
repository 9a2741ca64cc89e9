# realbugs-case: bug | family: 3 | shape: 6 | twin: ultralytics_mask_iou_uint8_fixed
# source: https://github.com/ultralytics/ultralytics/issues/15782
# report: mask_iou on uint8 masks: torch.matmul stays uint8 and the intersection wraps past 255
import torch


def mask_iou(mask1, mask2, eps=1e-7):
    intersection = torch.matmul(mask1, mask2.T).clamp_(0)  # realbug: s6
    union = (mask1.sum(1)[:, None] + mask2.sum(1)[None]) - intersection
    return intersection / (union + eps)

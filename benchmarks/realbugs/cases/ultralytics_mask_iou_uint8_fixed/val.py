import torch

from metrics import mask_iou


def match_masks(gt_masks: torch.Tensor, pred_masks: torch.Tensor):
    gt = gt_masks.view(gt_masks.shape[0], -1).to(torch.uint8)
    pred = pred_masks.gt(0.5).view(pred_masks.shape[0], -1).to(torch.uint8)
    return mask_iou(gt, pred)

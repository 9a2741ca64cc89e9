import torch

from ssim import ssim


@torch.no_grad()
def evaluate(model, loader):
    model = model.cuda().half().eval()
    scores = []
    for lr, hr in loader:
        sr = model(lr.cuda().half())
        scores.append(ssim(sr, hr.cuda().half()).mean().item())
    return sum(scores) / len(scores)

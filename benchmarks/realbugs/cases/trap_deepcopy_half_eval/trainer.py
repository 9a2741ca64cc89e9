# realbugs-case: trap | family: 5 | shape: -
# source: https://github.com/Megvii-BaseDetection/YOLOX/issues/908
# looks like: evaluation in half during training; it halves a deep copy, not the trained model
from copy import deepcopy

import torch


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    return [model(x.cuda().half()) for x in loader]


def train(model, optimizer, loader, epochs=2):
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        evaluate(deepcopy(model).half(), loader)

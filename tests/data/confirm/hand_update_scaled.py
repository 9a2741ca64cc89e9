"""A hand-written SGD update from scaled gradients: no torch.optim, no unscale_ and no
scaler.step(), so each update is 65536 times too large and the weights go inf, then NaN."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(16, 1).cuda()
scaler = torch.amp.GradScaler("cuda")
lr = 0.1
for iteration in range(4):
    inputs = torch.randn(32, 16, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(inputs).float().pow(2).mean()
    scaler.scale(loss).backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= lr * param.grad
            param.grad = None
    print("iteration", iteration, loss.item(), flush=True)

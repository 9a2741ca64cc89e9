"""An evaluation helper that casts the half model to float32 and never back: it first runs at
iteration 0, before the optimizer's first step, so training silently goes on in float32."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(16, 1).cuda().half()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
held_out = torch.randn(8, 16, device="cuda")


def evaluate(net):
    net.float()
    with torch.no_grad():
        return net(held_out).pow(2).mean().item()


for iteration in range(4):
    if iteration % 100 == 0:
        print("eval", evaluate(model))
    inputs = torch.randn(32, 16, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(inputs).float().pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

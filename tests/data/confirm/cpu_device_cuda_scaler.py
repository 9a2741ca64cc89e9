"""nanoGPT's CPU path: --device=cpu, no autocast, and a CUDA GradScaler enabled for float16,
which torch itself disables when CUDA is not there. A clean program."""
import torch
from torch import nn

device = "cpu"
dtype = "float16"
torch.manual_seed(0)
model = nn.Linear(16, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda", enabled=(dtype == "float16"))
for iteration in range(4):
    inputs = torch.randn(32, 16, device=device)
    loss = model(inputs).pow(2).mean()
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()

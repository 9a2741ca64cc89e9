"""float16 autocast whose forward overflows on every batch: unnormalised inputs (about 1e5) become
inf when nn.Linear casts them to float16, the loss is NaN, the GradScaler skips every step and the
model never trains."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda")
for iteration in range(6):
    inputs = torch.randn(32, 16, device="cuda") * 1e5
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(inputs).float().pow(2).mean()
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()

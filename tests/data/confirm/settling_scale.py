"""Healthy float16 AMP whose GradScaler starts far too high (2**24): the first steps overflow and
are skipped while the scale backs off, then training proceeds. A clean program."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda", init_scale=2.0**24)
for iteration in range(40):
    inputs = torch.randn(16, 8, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(inputs).float().pow(2).mean()
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()

"""float16 AMP whose loss is finite but whose gradients overflow float16 even unscaled: the
GradScaler backs off from 65536 below 1 and still skips every step; the model never trains."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(16, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda")
for iteration in range(40):
    inputs = torch.randn(32, 16, device="cuda") * 100  # weight gradients about 2e7: inf in float16
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(inputs).float().pow(2).mean() * 1000
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()

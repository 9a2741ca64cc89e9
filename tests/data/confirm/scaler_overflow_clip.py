"""fp16 AMP whose first steps overflow (the scaler skips them), clipping before unscale_ (DTL303),
in a loop of exactly twelve optimizer steps."""
import torch
from torch import nn

model = nn.Linear(8, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda", init_scale=2.0**24)
for step in range(12):
    inputs = torch.randn(16, 8, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(inputs).float().pow(2).mean()
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
print("scale", scaler.get_scale())

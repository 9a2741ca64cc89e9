"""Device chosen the way accelerate and transformers do (torch.accelerator), fp16 AMP with a
GradScaler when that device is CUDA, the model wrapped in nn.DataParallel."""
import torch
from torch import nn

accelerator = torch.accelerator.current_accelerator(check_available=True)
device = accelerator if accelerator is not None else torch.device("cpu")
model = nn.DataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
use_amp = device.type == "cuda"
scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
for step in range(3):
    inputs, targets = torch.randn(16, 8, device=device), torch.randn(16, 1, device=device)
    with torch.autocast(device.type, dtype=torch.float16, enabled=use_amp):
        loss = nn.functional.mse_loss(model(inputs), targets)
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
print("device", device, "amp", use_amp)

"""An accelerate training loop with fp16 mixed precision, as the accelerate examples write it.

Planted defect (DTL303): gradients are clipped with torch's clip_grad_norm_ right after
accelerator.backward(), while they are still multiplied by the loss scale (accelerate's own
accelerator.clip_grad_norm_ unscales first). The clean copy (--fixed) uses the latter.
"""
import sys

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

FIXED = "--fixed" in sys.argv
accelerator = Accelerator(mixed_precision="fp16" if torch.cuda.is_available() else "no")
torch.manual_seed(0)
data = TensorDataset(torch.randn(256, 32), torch.randint(0, 4, (256,)))
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = DataLoader(data, batch_size=32, shuffle=True)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for epoch in range(1):
    for inputs, labels in loader:
        loss = nn.functional.cross_entropy(model(inputs), labels)
        accelerator.backward(loss)
        if FIXED:
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
        else:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # defect: DTL303
        optimizer.step()
        optimizer.zero_grad()
accelerator.print("done on", accelerator.device, "mixed precision", accelerator.mixed_precision)

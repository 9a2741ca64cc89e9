"""A half model whose optimizer is built (DTL404's line runs), then a float batch crashes the
forward pass before any optimizer step: DTL404 was never tested (issue 15, point 4)."""
import torch
from torch import nn

model = nn.Linear(8, 1).half()
optimizer = torch.optim.Adam(model.parameters())
loss = model(torch.randn(4, 8)).float().mean()
loss.backward()
optimizer.step()

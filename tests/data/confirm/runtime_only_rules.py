"""Defects the static check cannot see, because the low dtype comes from the command line: AdamW's
default eps=1e-8 on float16 weights (DTL404), then the half model's output fed to a float32 layer
(DTL108). Each runtime-only finding must carry its rule's code."""
import sys

import torch
from torch import nn

low = getattr(torch, sys.argv[1])
torch.manual_seed(0)
model = nn.Linear(16, 4).cuda().to(low)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for iteration in range(1):
    loss = model(torch.randn(32, 16, device="cuda").to(low)).float().pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
head = nn.Linear(4, 1).cuda()
print(head(model(torch.randn(8, 16, device="cuda").to(low))))

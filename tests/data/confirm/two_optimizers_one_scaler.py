"""Two optimizers and one GradScaler: the second is stepped by hand after scaler.step() of the
first (DTL305), so its gradients are still multiplied by the loss scale. Four iterations."""
import torch
from torch import nn

torch.manual_seed(0)
encoder, head = nn.Linear(8, 8).cuda(), nn.Linear(8, 1).cuda()
encoder_optimizer = torch.optim.SGD(encoder.parameters(), lr=1e-2)
head_optimizer = torch.optim.SGD(head.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler("cuda")
for iteration in range(4):
    inputs = torch.randn(16, 8, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = head(encoder(inputs)).float().pow(2).mean()
    encoder_optimizer.zero_grad()
    head_optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(encoder_optimizer)
    head_optimizer.step()
    scaler.update()
    print("iteration", iteration, flush=True)

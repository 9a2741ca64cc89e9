"""Fixed twin of dtl305_step_bypasses_scaler.py: the scaler unscales, checks and steps."""

import torch
import torch.nn as nn


def batches(steps, device):
    generator = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x = torch.randn(32, 8, generator=generator)
        yield x.to(device), x.sum(dim=1, keepdim=True).to(device)


def train():
    device = "cuda"
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for step, (x, y) in enumerate(batches(10, device)):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    train()

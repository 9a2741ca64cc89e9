"""Fixed twin of dtl404_fp16_adam_eps.py: float32 master weights and optimizer state, float16
compute through autocast, loss scaling for the float16 gradients."""

import torch
import torch.nn as nn


def make_batch(device):
    x = torch.randn(32, 16, device=device)
    return x, 0.01 * x[:, :1]


def main():
    torch.manual_seed(0)
    device = "cuda"
    head = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.Adam(head.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(10):
        x, target = make_batch(device)
        with torch.autocast("cuda", dtype=torch.float16):
            prediction = head(x)
        loss = (prediction.float() - target).pow(2).mean()
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    main()

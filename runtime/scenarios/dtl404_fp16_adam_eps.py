"""A value-head fine-tune run entirely in float16 "to halve memory", with a stock Adam.

Defect (DTL404): Adam's eps=1e-8 is 0 in float16 and small squared gradients underflow to 0, so
the update divides by zero: after the first step the weights hold inf/NaN.
"""

import torch
import torch.nn as nn


def make_batch(device):
    x = torch.randn(32, 16, device=device)
    return x, 0.01 * x[:, :1]


def main():
    torch.manual_seed(0)
    device = "cuda"
    head = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1)).to(device).half()
    optimizer = torch.optim.Adam(head.parameters(), lr=1e-3)  # defect: DTL404
    for step in range(10):
        x, target = make_batch(device)
        prediction = head(x.half())
        loss = (prediction.float() - target).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())


if __name__ == "__main__":
    main()

"""A click-through-rate model trained with float16 autocast, using BCELoss on sigmoid outputs.

Defect (DTL207): CUDA autocast refuses binary_cross_entropy ("torch.nn.functional.
binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast"); plain CPU autocast runs it
in float32, so the script only fails on a GPU. The CPU emulation of CUDA autocast raises the
GPU's error.
"""

import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()
    criterion = nn.BCELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(10):
        x = torch.randn(32, 20, device="cuda")
        clicked = (torch.rand(32, device="cuda") < 0.1).float()
        with torch.autocast("cuda", dtype=torch.float16):
            probability = torch.sigmoid(model(x)).squeeze(-1)
            loss = criterion(probability, clicked)  # defect: DTL207
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    main()

"""Fixed twin of dtl207_bce_under_autocast.py: BCEWithLogitsLoss on the logits, safe under autocast."""

import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()
    criterion = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(10):
        x = torch.randn(32, 20, device="cuda")
        clicked = (torch.rand(32, device="cuda") < 0.1).float()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x).squeeze(-1), clicked)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    main()

"""Fixed twin of dtl204_backward_in_autocast.py: only the forward pass and the loss are autocast."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1)).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(10):
        images = torch.randn(2, 3, 16, 16, device="cuda")
        masks = torch.randint(0, 2, (2, 16, 16), device="cuda")
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(images), masks)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    main()

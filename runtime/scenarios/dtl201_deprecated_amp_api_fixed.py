"""Fixed twin of dtl201_deprecated_amp_api.py: the torch.amp API with an explicit device."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(10):
        images = torch.randn(4, 3, 12, 12).cuda(non_blocking=True)
        labels = torch.randint(0, 5, (4,)).cuda(non_blocking=True)
        with torch.amp.autocast("cuda"):
            loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    main()

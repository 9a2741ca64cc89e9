"""An image-classification loop written against the pre-2.4 AMP API.

Defect (DTL201): `torch.cuda.amp.GradScaler()` and `torch.cuda.amp.autocast()` are deprecated
(FutureWarning: "Please use torch.amp.autocast('cuda', args...) instead").
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.cuda.amp.GradScaler()  # defect: DTL201
    for step in range(10):
        images = torch.randn(4, 3, 12, 12).cuda(non_blocking=True)
        labels = torch.randint(0, 5, (4,)).cuda(non_blocking=True)
        with torch.cuda.amp.autocast():  # defect: DTL201
            loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    main()

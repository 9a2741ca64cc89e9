"""Fixed twin of dtl402_grad_cast_to_half.py: memory is saved by autocast, gradients keep the
parameters' dtype."""

import torch
import torch.nn as nn


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(8, 10)

    def forward(self, images):
        return self.classifier(self.features(images).flatten(1))


def main():
    torch.manual_seed(0)
    model = ConvNet().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda")
    for step in range(10):
        images = torch.randn(4, 3, 16, 16, device="cuda")
        labels = torch.randint(0, 10, (4,), device="cuda")
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    main()

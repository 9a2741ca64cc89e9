"""The seed blog's "save memory" recipe: cast every gradient to half before the optimizer step.

Defect (DTL402): the parameters are float32; assigning a float16 `.grad` raises "attempting to
assign a gradient with dtype 'c10::Half' to a tensor with grad_dtype 'Float'".
"""

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
    for step in range(10):
        images = torch.randn(4, 3, 16, 16, device="cuda")
        labels = torch.randint(0, 10, (4,), device="cuda")
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        for param in model.parameters():
            param.grad = param.grad.half()  # defect: DTL402
        optimizer.step()
        print(step, loss.item())


if __name__ == "__main__":
    main()

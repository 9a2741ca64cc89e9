"""Fixed twin of dtl101_half_model_fp32_input.py: keep float32 weights, let autocast pick float16
for the matmuls, and scale the loss so small float16 gradients survive."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SmallCNN(nn.Module):
    def __init__(self, classes: int):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images = torch.randint(0, 256, (64, 3, 8, 8), dtype=torch.uint8)
    labels = torch.randint(0, 4, (64,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=16, shuffle=True)

    model = SmallCNN(4).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(2):
        for images, y in loader:
            x = images.to(device).float() / 255
            y = y.to(device)
            with torch.autocast("cuda", dtype=torch.float16):
                logits = model(x)
                loss = nn.functional.cross_entropy(logits, y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()

"""A classifier fine-tuned in half precision by casting the model, while the batches stay float32.

Defect (DTL101): `model.half()` makes every weight float16, but the DataLoader yields float32
features; the first Linear raises "mat1 and mat2 must have the same dtype".
"""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.GELU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    features = torch.randn(64, 16)
    labels = torch.randint(0, 4, (64,))
    loader = DataLoader(TensorDataset(features, labels), batch_size=16, shuffle=True)

    model = MLP(16, 32, 4).to(device).half()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    for epoch in range(2):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)  # defect: DTL101
            loss = nn.functional.cross_entropy(logits.float(), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()

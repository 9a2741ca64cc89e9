"""Fixed twin of dtl209_autocast_float32_on.py: the AMP case autocasts to bfloat16."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def main(amp=True):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(5):
        x, y = torch.randn(8, 16), torch.randn(8, 1)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            out = model(x)
            loss = F.mse_loss(out.float(), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, out.dtype, loss.item())


if __name__ == "__main__":
    main()

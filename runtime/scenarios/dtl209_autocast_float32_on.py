"""A regression loop whose `--amp` switch turns on an autocast of dtype float32.

Defect (DTL209): the "AMP" case is not mixed precision. On the CPU torch warns "In CPU autocast,
but the target dtype is not supported. Disabling autocast." and every op runs in float32; on CUDA
the region is a float32 one (ultralytics/yolov5#11746's workaround spelled as an AMP mode).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def main(amp=True):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(5):
        x, y = torch.randn(8, 16), torch.randn(8, 1)
        with torch.autocast("cpu", dtype=torch.float32, enabled=amp):  # defect: DTL209
            out = model(x)
            loss = F.mse_loss(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, out.dtype, loss.item())


if __name__ == "__main__":
    main()

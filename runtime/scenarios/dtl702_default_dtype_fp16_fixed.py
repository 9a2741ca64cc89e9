"""Fixed twin of dtl702_default_dtype_fp16.py: the default dtype stays float32; float16 is used
where it is safe, inside autocast, with loss scaling."""

import numpy as np
import torch
import torch.nn as nn


def load_table(rows=64, columns=10):
    rng = np.random.default_rng(0)
    features = rng.standard_normal((rows, columns)).astype(np.float32)
    target = features @ rng.standard_normal((columns, 1)).astype(np.float32)
    return torch.from_numpy(features), torch.from_numpy(target)


def main():
    features, target = load_table()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(10):
        x, y = features.cuda(), target.cuda()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    main()

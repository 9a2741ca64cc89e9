"""A tabular model trained with float16 made the global default "to save memory".

Defect (DTL702): `torch.set_default_dtype(torch.float16)` silently makes every new parameter
float16, while the features come from NumPy as float32: the first layer raises "mat1 and mat2
must have the same dtype".
"""

import numpy as np
import torch
import torch.nn as nn

torch.set_default_dtype(torch.float16)  # defect: DTL702


def load_table(rows=64, columns=10):
    rng = np.random.default_rng(0)
    features = rng.standard_normal((rows, columns)).astype(np.float32)
    target = features @ rng.standard_normal((columns, 1)).astype(np.float32)
    return torch.from_numpy(features), torch.from_numpy(target)


def main():
    features, target = load_table()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    for step in range(10):
        x, y = features.cuda(), target.cuda()
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())


if __name__ == "__main__":
    main()

"""Fixed twin: a detector whose training script saved the model in half, run on float inputs.

The checkpoint still stores `deepcopy(model).half()` under "model"; the loader casts the module
back with `.float()` before running it on float32 frames.
"""

import os
import tempfile
from copy import deepcopy

import torch
import torch.nn as nn


def save_checkpoint(model, path):
    ckpt = {"epoch": 1, "model": deepcopy(model).half()}
    torch.save(ckpt, path)


def detect(path, frames):
    model = torch.load(path, map_location="cpu", weights_only=False)["model"].float()
    model.eval()
    for frame in frames:
        img = frame.float() / 255.0
        pred = model(img[None])
        print(tuple(pred.shape))


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 1))
    frames = [torch.randint(0, 256, (3, 16, 16), dtype=torch.uint8) for _ in range(2)]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "last.pt")
        save_checkpoint(model, path)
        detect(path, frames)


if __name__ == "__main__":
    main()

"""A detector whose training script saved the model in half (to halve the file), run on float inputs.

Defect (DTL101): the checkpoint stores `deepcopy(model).half()` under "model", so
`torch.load(path)["model"]` is a float16 module; the frames are normalised with `.float() / 255`
and the first convolution raises "Input type (float) and bias type (c10::Half) should be the same"
(YOLOv5's last.pt run with --device cpu, ultralytics/yolov5#101).
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
    model = torch.load(path, map_location="cpu", weights_only=False)["model"]
    model.eval()
    for frame in frames:
        img = frame.float() / 255.0
        pred = model(img[None])  # defect: DTL101
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

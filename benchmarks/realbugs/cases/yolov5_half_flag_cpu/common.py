import torch
import torch.nn as nn


class DetectMultiBackend(nn.Module):
    def __init__(self, weights, device=torch.device("cpu")):
        super().__init__()
        ckpt = torch.load(weights, map_location="cpu")
        self.model = ckpt["model"].float().fuse().eval().to(device)

    def forward(self, im):
        return self.model(im)[0]

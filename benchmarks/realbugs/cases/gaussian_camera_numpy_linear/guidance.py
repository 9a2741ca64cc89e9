import torch
import torch.nn as nn

from dataset import random_camera


class CameraEmbedding(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, camera):
        return self.mlp(camera)


def step(embedder: CameraEmbedding, batch=4):
    camera = random_camera(batch)
    return embedder(camera)  # realbug: f3 s6 @end

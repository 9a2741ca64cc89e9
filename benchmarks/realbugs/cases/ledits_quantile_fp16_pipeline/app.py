import torch

from pipeline_ledits import LEditsPipeline


def build(unet):
    return LEditsPipeline(unet, dtype=torch.float16)  # realbug: @q

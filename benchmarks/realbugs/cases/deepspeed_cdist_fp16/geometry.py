# realbugs-case: bug | family: 2 | shape: 2 | twin: deepspeed_cdist_fp16_fixed
# source: https://github.com/deepspeedai/DeepSpeed/issues/939
# report: DeepSpeed fp16 engine: th.cdist(x, y, p=2) -> "cdist_cuda" not implemented for 'Half'
import torch as th
import torch.nn as nn


class PairwiseDistanceHead(nn.Module):
    def __init__(self, dim=3):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, coords):
        x = self.proj(coords)
        return th.cdist(x, x, p=2)  # realbug: s2

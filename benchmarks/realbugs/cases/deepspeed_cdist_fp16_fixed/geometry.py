# realbugs-case: twin | family: 2 | shape: 2 | twin_of: deepspeed_cdist_fp16
# source: https://github.com/deepspeedai/DeepSpeed/issues/939
import torch as th
import torch.nn as nn


class PairwiseDistanceHead(nn.Module):
    def __init__(self, dim=3):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, coords):
        x = self.proj(coords)
        return th.cdist(x.float(), x.float(), p=2).to(x.dtype)

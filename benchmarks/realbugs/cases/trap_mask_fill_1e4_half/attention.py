# realbugs-case: trap | family: 1 | shape: -
# source: https://github.com/NVIDIA/apex/issues/1105
# looks like: a masked_fill on a half model's scores; -1e4 fits float16
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qk = nn.Linear(dim, dim * 2)

    def forward(self, x, mask):
        q, k = self.qk(x).chunk(2, dim=-1)
        scores = q @ k.transpose(-1, -2)
        scores = scores.masked_fill(mask == 0, -1e4)
        return scores.softmax(-1)


model = Attention(32).cuda().half()
out = model(torch.randn(2, 5, 32, device="cuda", dtype=torch.float16), torch.ones(2, 5, 5, device="cuda"))

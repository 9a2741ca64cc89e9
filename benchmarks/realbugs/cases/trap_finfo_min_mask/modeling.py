# realbugs-case: trap | family: 1 | shape: -
# source: https://github.com/huggingface/transformers/pull/4436
# looks like: an additive mask in an fp16 model; finfo(dtype).min is always representable
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.q = nn.Linear(dim, dim)

    def forward(self, hidden, attention_mask):
        dtype = hidden.dtype
        extended = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        q = self.q(hidden)
        return (q @ q.transpose(-1, -2) + extended).softmax(-1) @ q


encoder = Encoder().cuda().half()
print(encoder(torch.randn(1, 4, 64, device="cuda").half(), torch.ones(1, 4, device="cuda")).dtype)

# realbugs-case: trap | family: 1 | shape: -
# source: https://github.com/facebookresearch/fairseq/issues/3575
# looks like: -inf/-1e9 masking in an fp16 model; the scores are upcast to float32 first
import torch
import torch.nn as nn


class MultiheadAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x, key_padding_mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attn = (q @ k.transpose(-1, -2)).float()
        attn = attn.masked_fill(key_padding_mask[:, None, :], -1e9)
        probs = attn.softmax(-1).type_as(q)
        return probs @ v


layer = MultiheadAttention(16).cuda().half()
x = torch.randn(2, 5, 16, device="cuda", dtype=torch.float16)
print(layer(x, torch.zeros(2, 5, dtype=torch.bool, device="cuda")).dtype)

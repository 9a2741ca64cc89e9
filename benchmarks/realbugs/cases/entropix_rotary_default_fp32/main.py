import torch

from torch_model import attention

dim, heads = 64, 4
w = [torch.randn(dim, dim, dtype=torch.bfloat16) for _ in range(3)]
x = torch.randn(1, 8, dim, dtype=torch.bfloat16)
freqs = torch.polar(torch.ones(8, dim // heads // 2), torch.rand(8, dim // heads // 2))
print(attention(x, *w, freqs, heads).dtype)

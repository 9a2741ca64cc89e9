# realbugs-case: trap | family: 6 | shape: 2
# source: https://github.com/ChenyangSi/FreeU/pull/11
# looks like: an FFT inside an autocast model; the input is upcast first
import torch
import torch.nn as nn


class SpectralBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        freq = torch.fft.rfft(h.float(), dim=1)
        return torch.fft.irfft(freq, n=h.shape[1], dim=1).to(h.dtype)


block = SpectralBlock(24).cuda()
with torch.autocast("cuda", dtype=torch.float16):
    out = block(torch.randn(2, 96, 24, device="cuda"))

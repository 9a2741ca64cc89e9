# realbugs-case: bug | family: 6 | shape: 2 | twin: tslib_amp_rfft_fixed
# source: https://github.com/thuml/Time-Series-Library/issues/761
# report: --use_amp: xf = torch.fft.rfft(x, dim=1) -> cuFFT only supports powers of two in half precision, signal size [192]
import torch
import torch.nn as nn


class FourierBlock(nn.Module):
    def __init__(self, d_model, modes=32):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        self.modes = modes

    def forward(self, x):
        x = self.proj(x)
        xf = torch.fft.rfft(x, dim=1)  # realbug: s2 f6
        xf[:, self.modes:] = 0
        return torch.fft.irfft(xf, n=x.size(1), dim=1)

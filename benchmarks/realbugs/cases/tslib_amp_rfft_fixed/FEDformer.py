# realbugs-case: twin | family: 6 | shape: 2 | twin_of: tslib_amp_rfft
# source: https://github.com/thuml/Time-Series-Library/issues/761
import torch
import torch.nn as nn


class FourierBlock(nn.Module):
    def __init__(self, d_model, modes=32):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        self.modes = modes

    def forward(self, x):
        x = self.proj(x)
        with torch.autocast(device_type="cuda", enabled=False):
            xf = torch.fft.rfft(x.float(), dim=1)
            xf[:, self.modes:] = 0
            out = torch.fft.irfft(xf, n=x.size(1), dim=1)
        return out.to(x.dtype)

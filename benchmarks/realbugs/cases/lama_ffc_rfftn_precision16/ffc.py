# realbugs-case: bug | family: 2 | shape: 2 | twin: -
# source: https://github.com/advimman/lama/issues/360
# report: Lightning precision 16: torch.fft.rfftn in FourierUnit -> cuFFT only supports dimensions whose sizes are powers of two, signal size [528, 422]
import torch
import torch.nn as nn


class FourierUnit(nn.Module):
    def __init__(self, in_channels, out_channels, fft_norm="ortho"):
        super().__init__()
        self.conv_layer = nn.Conv2d(in_channels * 2, out_channels * 2, 1, bias=False)
        self.fft_norm = fft_norm

    def forward(self, x):
        batch = x.shape[0]
        ffted = torch.fft.rfftn(x, dim=(-2, -1), norm=self.fft_norm)  # realbug: s2 f2
        ffted = torch.cat([ffted.real, ffted.imag], dim=1)
        ffted = self.conv_layer(ffted)
        real, imag = ffted.chunk(2, dim=1)
        return torch.fft.irfftn(torch.complex(real, imag), s=x.shape[-2:], dim=(-2, -1), norm=self.fft_norm)

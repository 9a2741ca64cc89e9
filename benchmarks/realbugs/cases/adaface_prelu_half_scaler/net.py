# realbugs-case: bug | family: 1 | shape: - | twin: -
# source: https://github.com/mk-minchul/AdaFace/issues/127
# report: one PReLU modified to float16 inside the backbone; AMP training -> ValueError: Attempting to unscale FP16 gradients.
import torch
import torch.nn as nn


class BasicBlockIR(nn.Module):
    def __init__(self, in_channel, depth):
        super().__init__()
        self.res_layer = nn.Sequential(
            nn.BatchNorm2d(in_channel),
            nn.Conv2d(in_channel, depth, 3, 1, 1, bias=False),
            nn.BatchNorm2d(depth),
            nn.PReLU(depth, dtype=torch.float16),  # realbug: @end
            nn.Conv2d(depth, depth, 3, 1, 1, bias=False),
            nn.BatchNorm2d(depth),
        )

    def forward(self, x):
        return x + self.res_layer(x)

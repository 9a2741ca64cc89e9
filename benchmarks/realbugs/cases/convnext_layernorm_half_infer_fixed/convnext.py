# realbugs-case: twin | family: 1 | shape: - | twin_of: convnext_layernorm_half_infer
# source: https://github.com/facebookresearch/ConvNeXt/issues/80
import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps
        self.data_format = data_format
        self.normalized_shape = (normalized_shape,)

    def forward(self, x):
        if self.data_format == "channels_last":
            return nn.functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        input_dtype = x.dtype
        x = x.float()
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = ((x - u) / torch.sqrt(s + self.eps)).to(input_dtype)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class Stage(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = LayerNorm(dim, data_format="channels_first")

    def forward(self, x):
        return x + self.norm(self.dw(x))

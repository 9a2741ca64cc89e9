import torch

from modeling_swin import SwinLayer

layer = SwinLayer(8, window_size=4, shift_size=2).eval()
layer = layer.to(torch.bfloat16)
x = torch.randn(4, 16, 8, dtype=torch.bfloat16)
print(layer(x, 8, 8).dtype)

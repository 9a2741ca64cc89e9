import torch
import torch.nn as nn


class Codec(nn.Module):
    def __init__(self):
        super().__init__()
        self.g_a = nn.Conv2d(3, 8, 5, stride=2, padding=2)
        self.g_s = nn.ConvTranspose2d(8, 3, 5, stride=2, padding=2, output_padding=1)

    def compress(self, x):
        y = self.g_a(x)
        return {"strings": [y.round()], "shape": y.shape[-2:]}

    def decompress(self, strings, shape):
        return {"x_hat": self.g_s(strings[0]).clamp_(0, 1)}


def load_checkpoint(path):
    model = Codec()
    model.load_state_dict(torch.load(path, map_location="cpu"))
    return model

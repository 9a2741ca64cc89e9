import torch

from loader import ModelLoader


class MaskedModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(32 * 32, 8)

    def forward(self, pixel_values, pixel_mask):
        return self.proj(pixel_values.mean(1).flatten(1)) + self.proj(pixel_mask)


def run_bf16():
    loader = ModelLoader(MaskedModel)
    model = loader.load_model(dtype_override=torch.bfloat16)
    pixel_values, pixel_mask = loader.load_inputs(dtype_override=torch.bfloat16)
    return model(pixel_values, pixel_mask)  # realbug: @end

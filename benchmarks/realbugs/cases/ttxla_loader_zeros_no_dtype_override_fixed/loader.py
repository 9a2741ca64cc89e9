# realbugs-case: twin | family: - | shape: 1 | twin_of: ttxla_loader_zeros_no_dtype_override
# source: https://github.com/tenstorrent/tt-xla/pull/4574
import torch


class ModelLoader:
    def __init__(self, model_cls):
        self.model_cls = model_cls

    def load_model(self, dtype_override=None):
        model = self.model_cls()
        if dtype_override is not None:
            model = model.to(dtype_override)
        return model

    def load_inputs(self, dtype_override=None, batch_size=1):
        dtype = dtype_override if dtype_override is not None else torch.float32
        pixel_values = torch.randn(batch_size, 3, 32, 32, dtype=dtype)
        pixel_mask = torch.zeros(batch_size, 32 * 32, dtype=dtype)
        return pixel_values, pixel_mask

# realbugs-case: bug | family: - | shape: 1 | twin: ttxla_loader_zeros_no_dtype_override_fixed
# source: https://github.com/tenstorrent/tt-xla/pull/4574
# report: inputs built with torch.zeros(...) without honouring dtype_override: mat1 and mat2 must have the same dtype, but got Float and BFloat16
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
        pixel_values = torch.randn(batch_size, 3, 32, 32)
        if dtype_override is not None:
            pixel_values = pixel_values.to(dtype_override)
        pixel_mask = torch.zeros(batch_size, 32 * 32)  # realbug: s1 @end
        return pixel_values, pixel_mask

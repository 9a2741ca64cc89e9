# realbugs-case: bug | family: 1 | shape: - | twin: lambdalabs_predictor_half_ones_fixed
# source: https://github.com/LambdaLabsML/examples/issues/37
# report: training with fp16: RuntimeError: expected scalar type Half but found Float
import torch

from unet import TinyUNet


class Predictor:
    def __init__(self, ckpt_path=None, fp16=False, device="cuda"):
        self.device = device
        self.model = TinyUNet().to(device)
        if ckpt_path:
            self.model.load_state_dict(torch.load(ckpt_path, map_location=device))
        if fp16:
            self.model = self.model.half()  # realbug: @end

    @torch.no_grad()
    def warmup(self, size=64):
        return self.model(torch.ones(1, 3, size, size, device=self.device))  # realbug: f1 @end

    @torch.no_grad()
    def predict(self, image):
        return self.model(image.to(self.device, next(self.model.parameters()).dtype))

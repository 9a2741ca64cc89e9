# realbugs-case: twin | family: 1 | shape: - | twin_of: lambdalabs_predictor_half_ones
# source: https://github.com/LambdaLabsML/examples/issues/37
import torch

from unet import TinyUNet


class Predictor:
    def __init__(self, ckpt_path=None, fp16=False, device="cuda"):
        self.device = device
        self.dtype = torch.float16 if fp16 else torch.float32
        self.model = TinyUNet().to(device)
        if ckpt_path:
            self.model.load_state_dict(torch.load(ckpt_path, map_location=device))
        if fp16:
            self.model = self.model.half()

    @torch.no_grad()
    def warmup(self, size=64):
        return self.model(torch.ones(1, 3, size, size, device=self.device, dtype=self.dtype))

    @torch.no_grad()
    def predict(self, image):
        return self.model(image.to(self.device, self.dtype))

import torch


class EMAModel:
    def __init__(self, model, decay=0.9999):
        self.averaged_model = model.eval().requires_grad_(False)
        self.decay = decay

    @torch.no_grad()
    def step(self, new_params):
        for ema_p, p in zip(self.averaged_model.parameters(), new_params):
            ema_p.mul_(self.decay).add_(p.detach().to(ema_p.dtype), alpha=1 - self.decay)

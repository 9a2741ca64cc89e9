# realbugs-case: trap | family: 5 | shape: 5
# source: https://github.com/d8ahazard/sd_dreambooth_extension/pull/1417
# looks like: an EMA copy of a model trained in mixed precision; the copy is kept in float32
import copy

import torch


class EMA:
    def __init__(self, model, decay=0.9999):
        self.shadow = copy.deepcopy(model).to(torch.float32).eval().requires_grad_(False)
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        for s, p in zip(self.shadow.parameters(), model.parameters()):
            s.mul_(self.decay).add_(p.detach().float(), alpha=1 - self.decay)

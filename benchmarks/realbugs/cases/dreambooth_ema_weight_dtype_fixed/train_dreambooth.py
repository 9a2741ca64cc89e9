# realbugs-case: twin | family: 5 | shape: 5 | twin_of: dreambooth_ema_weight_dtype
# source: https://github.com/d8ahazard/sd_dreambooth_extension/pull/1417
import copy

import torch

from ema import EMAModel


def train(unet, optimizer, loader, args):
    ema_unet = None
    if args.use_ema:
        ema_unet = EMAModel(copy.deepcopy(unet).to(dtype=torch.float32))
    for batch in loader:
        loss = unet(**batch).sample.float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if ema_unet is not None:
            ema_unet.step(unet.parameters())

# realbugs-case: bug | family: 5 | shape: 5 | twin: dreambooth_ema_weight_dtype_fixed
# source: https://github.com/d8ahazard/sd_dreambooth_extension/pull/1417
# report: with weight_dtype float16/bfloat16 and use_ema, EMA updates round to zero: the EMA model never changes
import copy

import torch

from ema import EMAModel


def train(unet, optimizer, loader, args):
    weight_dtype = torch.float16 if args.mixed_precision == "fp16" else torch.bfloat16
    ema_unet = None
    if args.use_ema:
        ema_unet = EMAModel(copy.deepcopy(unet).to(dtype=weight_dtype))  # realbug: f5 s5
    for batch in loader:
        loss = unet(**batch).sample.float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if ema_unet is not None:
            ema_unet.step(unet.parameters())

# realbugs-case: trap | family: 6 | shape: -
# source: https://github.com/milesial/Pytorch-UNet/pull/470
# looks like: autocast and a scaler switched by a flag; forward and loss are inside, backward outside, unscale before clipping
import torch


def train(model, loader, amp=True):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()

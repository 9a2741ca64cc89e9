import torch

from models import PathReasoner


def train(loader, use_amp=True):
    model = PathReasoner(256).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for h, mask, target in loader:
        with torch.autocast("cuda", dtype=torch.float16, enabled=use_amp):
            probs = model(h.cuda(), mask.cuda())
            loss = torch.nn.functional.mse_loss(probs, target.cuda())
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

import torch
import torch.nn.functional as F

from model import Model
from option import args


def make_optimizer(args, target):
    return torch.optim.Adam(target.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8)


def train(loader):
    model = Model(args).cuda()
    optimizer = make_optimizer(args, model)
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "half")
    for lr, hr in loader:
        with torch.autocast("cuda", dtype=torch.float16, enabled=args.precision == "half"):
            loss = F.l1_loss(model(lr.cuda()), hr.cuda())
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

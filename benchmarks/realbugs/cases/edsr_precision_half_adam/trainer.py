import torch
import torch.nn.functional as F

from model import Model
from option import args


def make_optimizer(args, target):
    return torch.optim.Adam(target.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8)  # realbug: f1 f2 @end


def train(loader):
    model = Model(args).cuda()
    optimizer = make_optimizer(args, model)
    for lr, hr in loader:
        if args.precision == "half":
            lr, hr = lr.half(), hr.half()
        loss = F.l1_loss(model(lr.cuda()), hr.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

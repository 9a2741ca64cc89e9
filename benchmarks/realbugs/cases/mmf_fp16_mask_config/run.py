import torch
from omegaconf import OmegaConf

from modeling import VideoTextEncoder


def run(config_path="config.yaml"):
    config = OmegaConf.load(config_path)
    model = VideoTextEncoder().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.optimizer.lr)
    scaler = torch.cuda.amp.GradScaler(enabled=config.training.fp16)
    for feats, mask in config.loader:
        with torch.cuda.amp.autocast(enabled=config.training.fp16):
            out = model(feats.cuda(), mask.cuda())
            loss = out.pow(2).mean()
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

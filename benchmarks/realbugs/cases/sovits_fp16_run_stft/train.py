import json

import torch
from torch.cuda.amp import GradScaler, autocast

from mel_processing import spectrogram_torch

hps = json.load(open("configs/config.json"))


def train_and_evaluate(net_g, optim_g, train_loader):
    scaler = GradScaler(enabled=hps["train"]["fp16_run"])
    for x, y in train_loader:
        with autocast(enabled=hps["train"]["fp16_run"]):
            y_hat = net_g(x.cuda())
            y_hat_mel = spectrogram_torch(y_hat.squeeze(1), 1280, 320, 1280)
            y_mel = spectrogram_torch(y.cuda().squeeze(1), 1280, 320, 1280)
            loss = torch.nn.functional.l1_loss(y_mel, y_hat_mel)
        optim_g.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optim_g)
        scaler.update()

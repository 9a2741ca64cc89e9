from copy import deepcopy

import torch


def save_checkpoint(model, optimizer, epoch, path="weights/last.pt"):
    ckpt = {
        "epoch": epoch,
        "model": deepcopy(model).half(),  # realbug: @end
        "optimizer": optimizer.state_dict(),
    }
    torch.save(ckpt, path)

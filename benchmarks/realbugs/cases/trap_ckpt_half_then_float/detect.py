# realbugs-case: trap | family: 4 | shape: -
# source: https://github.com/ultralytics/yolov5/issues/101
# looks like: a checkpoint saved in half loaded for CPU inference; attempt_load calls .float()
import torch


def attempt_load(weights, device="cpu"):
    ckpt = torch.load(weights, map_location="cpu")
    model = (ckpt.get("ema") or ckpt["model"]).to(device).float()
    return model.eval()


def detect(weights, images):
    model = attempt_load(weights)
    return [model(im.float()[None] / 255) for im in images]

# realbugs-case: trap | family: 7 | shape: -
# source: https://github.com/ultralytics/yolov5/issues/10379
# looks like: --half inference; the flag is dropped on a CPU device
import argparse

import torch


def run(model, images, device="cpu", half=False):
    device = torch.device(device)
    half &= device.type != "cpu"
    model = model.to(device)
    if half:
        model.half()
    for im in images:
        im = im.to(device)
        im = im.half() if half else im.float()
        print(model(im[None]).shape)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--half", action="store_true")
    parser.add_argument("--device", default="cpu")
    opt = parser.parse_args()
    run(torch.nn.Conv2d(3, 8, 3), [], opt.device, opt.half)

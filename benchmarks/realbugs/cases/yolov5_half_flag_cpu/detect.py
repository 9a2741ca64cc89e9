# realbugs-case: bug | family: 7 | shape: - | twin: yolov5_half_flag_cpu_fixed
# source: https://github.com/ultralytics/yolov5/issues/10379
# report: --half with a CPU device -> RuntimeError: "slow_conv2d_cpu" not implemented for 'Half'
import argparse

import torch

from common import DetectMultiBackend


def run(weights, source, device="cpu", half=False, imgsz=640):
    device = torch.device(device)
    model = DetectMultiBackend(weights, device=device)
    if half:
        model.half()  # realbug: f7 @end
    for im in source:
        im = torch.from_numpy(im).to(device)
        im = im.half() if half else im.float()
        im /= 255
        pred = model(im[None])  # realbug: @end
        print(pred.shape)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", default="yolov5n.pt")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--half", action="store_true", help="use FP16 half-precision inference")
    opt = parser.parse_args()
    run(opt.weights, [], device=opt.device, half=opt.half)

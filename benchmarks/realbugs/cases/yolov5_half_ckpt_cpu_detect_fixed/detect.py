# realbugs-case: twin | family: 4 | shape: - | twin_of: yolov5_half_ckpt_cpu_detect
# source: https://github.com/ultralytics/yolov5/issues/101
import argparse

import torch


def detect(weights, source, device="cpu"):
    device = torch.device(device)
    model = torch.load(weights, map_location=device)["model"].float()
    model.eval()
    for img in source:
        img = torch.from_numpy(img).to(device).float() / 255.0
        pred = model(img[None])[0]
        print(pred.shape)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", default="weights/last.pt")
    parser.add_argument("--device", default="cpu")
    opt = parser.parse_args()
    detect(opt.weights, [], opt.device)

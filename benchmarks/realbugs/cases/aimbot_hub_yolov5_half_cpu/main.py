# realbugs-case: bug | family: 7 | shape: - | twin: -
# source: https://github.com/RootKit-Org/AI-Aimbot/issues/114
# report: torch.hub yolov5 model .half() run on a machine without CUDA -> "slow_conv2d_cpu" not implemented for 'Half'
import numpy as np
import torch


def main():
    model = torch.hub.load("ultralytics/yolov5", "yolov5s", pretrained=True, force_reload=False)
    model.half()  # realbug: f7 @end
    frame = np.zeros((320, 320, 3), dtype=np.uint8)
    results = model(frame, size=320)  # realbug: @end
    print(results.xyxy[0])


if __name__ == "__main__":
    main()

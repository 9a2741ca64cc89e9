# realbugs-case: trap | family: 5 | shape: -
# source: https://github.com/ultralytics/yolov5/issues/10379
# looks like: a model halved after training; it is only exported, on the GPU, with a half example input
import torch


def export_torchscript(model, file="model.torchscript", imgsz=640):
    model = model.cuda().eval().half()
    im = torch.zeros(1, 3, imgsz, imgsz, device="cuda").half()
    ts = torch.jit.trace(model, im, strict=False)
    ts.save(file)
    return file

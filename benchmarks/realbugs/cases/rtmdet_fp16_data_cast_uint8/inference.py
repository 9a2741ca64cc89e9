# realbugs-case: bug | family: 1 | shape: - | twin: -
# source: https://github.com/open-mmlab/mmdetection/issues/11166
# report: wrap_fp16_model(model) then the raw uint8 batch cast to half; the data preprocessor normalises it back to float32 -> Input type (torch.cuda.FloatTensor) and weight type (torch.cuda.HalfTensor)
import torch
import torch.nn as nn


class DataPreprocessor(nn.Module):
    def __init__(self, mean=(123.675, 116.28, 103.53), std=(58.395, 57.12, 57.375)):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(-1, 1, 1), False)
        self.register_buffer("std", torch.tensor(std).view(-1, 1, 1), False)

    def forward(self, inputs):
        return (inputs.float() - self.mean) / self.std


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.data_preprocessor = DataPreprocessor()
        self.backbone = nn.Conv2d(3, 16, 3)

    def forward(self, inputs):
        return self.backbone(self.data_preprocessor(inputs))  # realbug: f1 @d


def inference_detector(model: Detector, img: torch.Tensor):
    model.backbone.half()  # realbug: @d
    with torch.no_grad():
        return model(img.half())

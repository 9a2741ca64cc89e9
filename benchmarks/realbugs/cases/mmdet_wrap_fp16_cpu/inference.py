# realbugs-case: bug | family: 7 | shape: - | twin: -
# source: https://github.com/open-mmlab/mmdetection/issues/2951
# report: wrap_fp16_model(model) for inference on the CPU -> "unfolded2d_copy" not implemented for 'Half'
import torch


def wrap_fp16_model(model):
    model.half()
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.float()
    return model


def init_detector(model, checkpoint, device="cpu", fp16=True):
    model.load_state_dict(torch.load(checkpoint, map_location="cpu"))
    if fp16:
        wrap_fp16_model(model)  # realbug: f7 @end
    model.to(device)
    model.eval()
    return model


def inference_detector(model, img):
    data = torch.from_numpy(img).permute(2, 0, 1)[None].float().half()
    with torch.no_grad():
        return model(data)  # realbug: @end

import torch

from sd_hijack_optimizations import split_cross_attention_forward


def load_model(model, half=True):
    if half:
        model = model.half()
    for module in model.modules():
        if module.__class__.__name__ == "CrossAttention":
            module.forward = split_cross_attention_forward.__get__(module)
    return model.cuda()

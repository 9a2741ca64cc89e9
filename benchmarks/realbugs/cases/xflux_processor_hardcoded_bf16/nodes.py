import torch

from layers import IPProcessor


def apply_ip_adapter(dtype=torch.float16, device="cuda"):
    proc = IPProcessor(768, 64).to(device, dtype)
    img_q = torch.randn(1, 16, 64, device=device, dtype=dtype)
    image_proj = torch.randn(1, 4, 768, device=device, dtype=dtype)
    return proc(img_q, image_proj)

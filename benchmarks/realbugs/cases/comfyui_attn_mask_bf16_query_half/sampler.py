import torch

from attention import attention_pytorch


def sample(model_dtype=torch.float16, device="cuda"):
    q = torch.randn(1, 77, 640, device=device, dtype=model_dtype)
    mask = torch.ones(1, 1, 77, 77, device=device)
    return attention_pytorch(q, q, q, heads=8, mask=mask)

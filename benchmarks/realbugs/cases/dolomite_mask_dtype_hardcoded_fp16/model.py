import torch

from attention import attention


def forward_bf16(device="cuda"):
    q = torch.randn(2, 4, 16, 32, device=device, dtype=torch.bfloat16)
    am = torch.ones(2, 16, device=device)
    return attention(q, q, q, am)

"""Fixed twin of dtl503_fp16_exp_overflow.py: the normalised exponential runs in float32."""

import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        logits = self.proj(x)
        return torch.softmax(logits.float(), dim=-1).to(logits.dtype)


@torch.inference_mode()
def main():
    torch.manual_seed(0)
    gate = Gate().cuda().half().eval()
    x = 8 * torch.randn(4, 16, device="cuda", dtype=torch.float16)
    print(gate(x))


if __name__ == "__main__":
    main()

"""A hand-written softplus-style gate in a float16 inference model.

Defect (DTL503): `torch.exp` on float16 activations overflows past 65504 (exp(12) already does):
the gate turns into inf and then NaN downstream. CUDA autocast would run exp in float32; a
model cast with `.half()` does not.
"""

import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        logits = self.proj(x)
        weights = torch.exp(logits)  # defect: DTL503
        return weights / weights.sum(dim=-1, keepdim=True)


@torch.inference_mode()
def main():
    torch.manual_seed(0)
    gate = Gate().cuda().half().eval()
    x = 8 * torch.randn(4, 16, device="cuda", dtype=torch.float16)
    print(gate(x))


if __name__ == "__main__":
    main()

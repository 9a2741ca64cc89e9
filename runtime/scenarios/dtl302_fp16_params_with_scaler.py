"""LoRA-style fine-tune: the base is loaded in float16 and the new adapter is cast along with it.

Defect (DTL302): the trainable adapter weights are float16 too, and GradScaler refuses to unscale
float16 gradients: "Attempting to unscale FP16 gradients."
"""

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, rank: int = 4):
        super().__init__()
        self.base = base
        self.down = nn.Linear(base.in_features, rank, bias=False)
        self.up = nn.Linear(rank, base.out_features, bias=False)
        nn.init.zeros_(self.up.weight)

    def forward(self, x):
        return self.base(x) + self.up(self.down(x))


def main():
    torch.manual_seed(0)
    base = nn.Linear(32, 32)
    base.requires_grad_(False)
    model = LoRALinear(base).cuda().half()  # defect: DTL302 (reported where the weights become float16)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(10):
        x = torch.randn(8, 32, device="cuda", dtype=torch.float16)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).float().pow(2).mean()
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    main()

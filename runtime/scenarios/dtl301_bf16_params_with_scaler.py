"""A bfloat16 fine-tune that kept the float16 recipe's GradScaler.

Defect (DTL301): the model is cast to bfloat16, so its gradients are bfloat16; bf16 needs no loss
scaling, and on CUDA unscaling them raises "_amp_foreach_non_finite_check_and_unscale_cuda not
implemented for 'BFloat16'". (On the CPU the unscale is silent; confirm reports the bf16
gradients it saw at unscale_.)
"""

import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16)).cuda().to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")  # defect: DTL301
    for step in range(10):
        x = torch.randn(8, 16, device="cuda", dtype=torch.bfloat16)
        loss = (model(x) - x).float().pow(2).mean()
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        print(step, loss.item())


if __name__ == "__main__":
    main()

"""Fixed twin of dtl301_bf16_params_with_scaler.py: float32 weights under bfloat16 autocast, and
no loss scaling (bf16 has float32's range)."""

import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(10):
        x = torch.randn(8, 16, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = (model(x).float() - x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        print(step, loss.item())


if __name__ == "__main__":
    main()

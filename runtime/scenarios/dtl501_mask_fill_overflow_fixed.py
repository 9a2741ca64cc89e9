"""Fixed twin of dtl501_mask_fill_overflow.py: mask with the smallest value the scores' dtype holds."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        attn = F.softmax(scores, dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, t, c))


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(50, 32), CausalSelfAttention(), nn.Linear(32, 50)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    tokens = torch.randint(0, 50, (4, 9), device="cuda")
    for step in range(10):
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 50), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


if __name__ == "__main__":
    main()

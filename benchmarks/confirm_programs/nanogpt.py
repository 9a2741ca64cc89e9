"""nanoGPT's train.py at toy size: a character GPT, AdamW, gradient clipping, CUDA as written.

Planted defect (DTL404, DTL401): the whole model is cast to float16 and trained by AdamW with
its default eps=1e-8, which is 0 in float16; the run diverges without ever producing inf/NaN.
The clean copy (--fixed) keeps float32 weights and trains under float16 autocast + GradScaler.
"""
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

FIXED = "--fixed" in sys.argv
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(1337)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=65, dim=64, heads=4, layers=2, block=32):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(block, dim)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1), device=idx.device))
        logits = self.head(self.ln(self.blocks(x)))
        return F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.view(-1))


data = torch.randint(0, 65, (4096,))


def get_batch(batch=8, block=32):
    starts = torch.randint(len(data) - block - 1, (batch,))
    x = torch.stack([data[i:i + block] for i in starts])
    y = torch.stack([data[i + 1:i + 1 + block] for i in starts])
    return x.to(device), y.to(device)


model = GPT().to(device)
if not FIXED:
    model = model.half()  # defect: DTL401
optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
scaler = torch.amp.GradScaler(device, enabled=FIXED)
for iteration in range(8):
    lr = 6e-4 * min(1.0, (iteration + 1) / 4) * 0.5 * (1 + math.cos(math.pi * iteration / 8))
    for group in optimizer.param_groups:
        group["lr"] = lr
    x, y = get_batch()
    with torch.autocast(device, dtype=torch.float16, enabled=FIXED):
        loss = model(x, y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    print(f"iter {iteration}: loss {loss.item():.4f}")

"""A tiny language-model step with gradient clipping under float16 AMP.

Defect (DTL303): `clip_grad_norm_` runs on gradients still multiplied by the loss scale, so it
sees a norm ~65536x too large and clips almost everything away (the scaler unscales afterwards).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.block = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = self.embed(tokens)
        h = h + self.block(h)
        return self.head(h)


def main():
    torch.manual_seed(0)
    model = TinyLM().to("cuda")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler("cuda")
    data = torch.randint(0, 64, (8, 17), device="cuda")
    for step in range(10):
        inputs, targets = data[:, :-1], data[:, 1:]
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(inputs)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # defect: DTL303
        scaler.step(optimizer)
        scaler.update()
        print(f"step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()

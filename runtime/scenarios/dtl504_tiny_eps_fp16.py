"""Sentence embeddings for retrieval, computed by a float16 encoder with masked mean pooling.

Defect (DTL504): `+ 1e-8` is 0 in float16 (the smallest subnormal is 6e-8), so a document that is
all padding gets a zero vector and normalising it computes 0/0 = NaN.
"""

import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, vocab=100, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.mix = nn.Linear(dim, dim)

    def forward(self, ids, mask):
        hidden = torch.tanh(self.mix(self.embed(ids)))
        hidden = hidden * mask.unsqueeze(-1).to(hidden.dtype)
        return hidden.sum(dim=1) / mask.sum(dim=1, keepdim=True).clamp(min=1).to(hidden.dtype)


@torch.no_grad()
def embed(encoder, ids):
    mask = ids != 0
    pooled = encoder(ids, mask)
    return pooled / (pooled.norm(dim=-1, keepdim=True) + 1e-8)  # defect: DTL504


def main():
    torch.manual_seed(0)
    encoder = Encoder().cuda().half().eval()
    docs = torch.randint(1, 100, (4, 12), device="cuda")
    docs[2] = 0  # an empty document: all padding
    vectors = embed(encoder, docs)
    scores = vectors @ vectors[0]
    print("scores", scores.tolist())


if __name__ == "__main__":
    main()

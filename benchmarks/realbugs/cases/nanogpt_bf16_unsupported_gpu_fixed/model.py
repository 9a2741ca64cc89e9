import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class GPTConfig:
    vocab_size: int = 50304
    n_embd: int = 128


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx, targets=None):
        logits = self.lm_head(self.wte(idx))
        loss = None
        if targets is not None:
            loss = nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

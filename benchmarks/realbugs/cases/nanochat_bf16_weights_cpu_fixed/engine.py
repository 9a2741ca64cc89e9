# realbugs-case: twin | family: 7 | shape: 1 | twin_of: nanochat_bf16_weights_cpu
# source: https://github.com/karpathy/nanochat/pull/224
import torch
import torch.nn as nn


class GPT(nn.Module):
    def __init__(self, vocab_size=512, n_embd=64):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def init_weights(self, device_type):
        if device_type == "cuda":
            self.wte.to(dtype=torch.bfloat16)

    def forward(self, idx):
        x = self.wte(idx)
        return self.lm_head(x.to(self.lm_head.weight.dtype))


def generate(device_type="cpu"):
    model = GPT()
    model.init_weights(device_type)
    model.to(device_type)
    ids = torch.randint(0, 512, (1, 8), device=device_type)
    return model(ids)

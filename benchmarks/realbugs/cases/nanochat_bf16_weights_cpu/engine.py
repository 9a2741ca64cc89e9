# realbugs-case: bug | family: 7 | shape: 1 | twin: nanochat_bf16_weights_cpu_fixed
# source: https://github.com/karpathy/nanochat/pull/224
# report: on a CPU, bfloat16 embedding weights meet float32 weights: expected m1 and m2 to have the same dtype, but got: c10::BFloat16 != float
import torch
import torch.nn as nn


class GPT(nn.Module):
    def __init__(self, vocab_size=512, n_embd=64):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def init_weights(self):
        self.wte.to(dtype=torch.bfloat16)  # realbug: @end

    def forward(self, idx):
        x = self.wte(idx)
        return self.lm_head(x)  # realbug: f7 s1 @end


def generate(device_type="cpu"):
    model = GPT()
    model.init_weights()
    model.to(device_type)
    ids = torch.randint(0, 512, (1, 8), device=device_type)
    return model(ids)

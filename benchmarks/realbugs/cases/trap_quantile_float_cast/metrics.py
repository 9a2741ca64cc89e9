# realbugs-case: trap | family: 2 | shape: 2
# source: https://github.com/huggingface/trl/issues/3666
# looks like: torch.quantile on bf16 model outputs; the values are upcast first
import torch


def entropy_threshold(entropies: torch.Tensor, q: float = 0.8) -> torch.Tensor:
    return torch.quantile(entropies.float(), q)


logits = torch.randn(4, 16, 50, dtype=torch.bfloat16)
ent = -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1)
print(entropy_threshold(ent))

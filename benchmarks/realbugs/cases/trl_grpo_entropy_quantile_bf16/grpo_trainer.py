# realbugs-case: bug | family: 2 | shape: 2 | twin: trl_grpo_entropy_quantile_bf16_fixed
# source: https://github.com/huggingface/trl/issues/3666
# report: training with bf16, the token entropies are bfloat16 and torch.quantile raises: quantile() input tensor must be either float or double dtype
import torch

from config import GRPOConfig


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    probs = torch.softmax(logits, dim=-1)
    return -(probs * torch.log_softmax(logits, dim=-1)).sum(-1)


def high_entropy_mask(logits, completion_mask, top_entropy_quantile=0.2):
    entropies = entropy_from_logits(logits)
    non_pad = entropies[completion_mask.bool()]
    threshold = torch.quantile(non_pad, 1 - top_entropy_quantile)  # realbug: s2 @q
    return entropies >= threshold


def compute_loss(model, inputs, args: GRPOConfig):
    model = model.to(torch.bfloat16 if args.bf16 else torch.float32)  # realbug: @q
    logits = model(inputs["input_ids"]).logits
    return high_entropy_mask(logits, inputs["completion_mask"], args.top_entropy_quantile)

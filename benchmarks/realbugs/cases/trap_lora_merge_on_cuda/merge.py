# realbugs-case: trap | family: 4 | shape: -
# source: https://github.com/Blealtan/RWKV-LM-LoRA/issues/16
# looks like: fp16 LoRA weights merged with a matmul; the merge runs in float32 and the result is cast back
import torch


def merge_lora(weight: torch.Tensor, lora_a: torch.Tensor, lora_b: torch.Tensor, scale: float) -> torch.Tensor:
    delta = lora_b.float() @ lora_a.float()
    return (weight.float() + delta * scale).to(weight.dtype)

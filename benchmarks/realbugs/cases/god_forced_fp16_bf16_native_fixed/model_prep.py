# realbugs-case: twin | family: 4 | shape: 3 | twin_of: god_forced_fp16_bf16_native
# source: https://github.com/gradients-ai/G.O.D/pull/1231
import torch
from transformers import AutoModelForCausalLM


def load_base_model(model_id, device="cuda"):
    model = AutoModelForCausalLM.from_pretrained(model_id, torch_dtype="auto")
    return model.to(device).eval()


@torch.no_grad()
def eval_loss(model, batches):
    losses = [model(input_ids=b, labels=b).loss.item() for b in batches]
    return sum(losses) / max(len(losses), 1)

# realbugs-case: bug | family: 4 | shape: 3 | twin: god_forced_fp16_bf16_native_fixed
# source: https://github.com/gradients-ai/G.O.D/pull/1231
# report: model prep hard-coded torch_dtype=torch.float16; bf16-native checkpoints (Qwen3-8B-Base) overflow: loss=nan
import torch
from transformers import AutoModelForCausalLM


def load_base_model(model_id, device="cuda"):
    model = AutoModelForCausalLM.from_pretrained(model_id, torch_dtype=torch.float16)  # realbug: f4 s3
    return model.to(device).eval()


@torch.no_grad()
def eval_loss(model, batches):
    losses = [model(input_ids=b, labels=b).loss.item() for b in batches]
    return sum(losses) / max(len(losses), 1)

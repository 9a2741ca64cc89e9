# realbugs-case: bug | family: 5 | shape: 5 | twin: -
# source: https://github.com/AndreasBergmeister/ram/issues/6
# report: the inactive "old"/"evaluation" LoRA adapters are cast to the fp16 weight dtype with the frozen backbone; their in-place EMA updates round away
import torch
from peft import LoraConfig, get_peft_model


def build_pipeline(pipe, dtype=torch.float16):
    lora_config = LoraConfig(r=16, target_modules=["to_q", "to_k", "to_v"])
    pipe.transformer = get_peft_model(pipe.transformer, lora_config)
    pipe.transformer.add_adapter("old", lora_config)
    pipe.transformer.add_adapter("evaluation", lora_config)
    for p in pipe.transformer.parameters():
        if not p.requires_grad:
            p.data = p.data.to(dtype)  # realbug: f5 s5
    return pipe


@torch.no_grad()
def ema_update(targets, sources, mix=0.99):
    for t, s in zip(targets, sources):
        t.data.mul_(mix).add_(s.detach().data, alpha=1.0 - mix)

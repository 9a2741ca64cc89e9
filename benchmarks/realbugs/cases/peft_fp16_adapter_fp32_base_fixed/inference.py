# realbugs-case: twin | family: 4 | shape: - | twin_of: peft_fp16_adapter_fp32_base
# source: https://github.com/huggingface/peft/issues/88
import torch
from transformers import AutoModelForSeq2SeqLM

from lora import LoraLinear


def attach_adapter(model, adapter_path):
    state = torch.load(adapter_path, map_location="cpu")
    for name, module in model.named_modules():
        if name.endswith("q") and f"{name}.lora_A" in state:
            lora = LoraLinear(module, r=8)
            lora.lora_A.weight.data = state[f"{name}.lora_A"].to(module.weight.dtype)
            lora.lora_B.weight.data = state[f"{name}.lora_B"].to(module.weight.dtype)
            parent = model.get_submodule(name.rsplit(".", 1)[0])
            setattr(parent, "q", lora)
    return model


model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
model = attach_adapter(model, "adapter_fp16.bin")
out = model.generate(torch.tensor([[100, 200, 1]]))

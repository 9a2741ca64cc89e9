import torch


def save_adapter(model, path="adapter_fp16.bin"):
    state = {k: v.half() for k, v in model.state_dict().items() if "lora_" in k}
    torch.save(state, path)

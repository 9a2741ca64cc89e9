# realbugs-case: bug | family: 7 | shape: - | twin: -
# source: https://github.com/Linaqruf/kohya-trainer/issues/246
# report: mixed_precision = "bf16" on a T4/V100 -> bf16 mixed precision requires PyTorch >= 1.10 and a supported device
import toml
import torch
from accelerate import Accelerator


def prepare_accelerator(config_path):
    config = toml.load(config_path)
    accelerator = Accelerator(
        mixed_precision=config["training"]["mixed_precision"],  # realbug: f7
        gradient_accumulation_steps=config["training"]["gradient_accumulation_steps"],
    )
    save_dtype = torch.bfloat16 if config["training"]["save_precision"] == "bf16" else torch.float16
    return accelerator, save_dtype

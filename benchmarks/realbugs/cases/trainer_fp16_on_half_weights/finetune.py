# realbugs-case: bug | family: 2 | shape: - | twin: trainer_fp16_on_half_weights_fixed
# source: https://github.com/mark1879/Baichuan-13B-Finetuning/issues/21
# report: Trainer(fp16=True) on a model loaded with torch_dtype=torch.float16 -> ValueError: Attempting to unscale FP16 gradients.
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

from data import build_dataset


def main(model_path="baichuan-inc/Baichuan-13B-Base"):
    model = AutoModelForCausalLM.from_pretrained(
        model_path, torch_dtype=torch.float16, trust_remote_code=True  # realbug: f2 @end
    )
    model.gradient_checkpointing_enable()
    args = TrainingArguments(
        output_dir="out",
        per_device_train_batch_size=1,
        gradient_accumulation_steps=8,
        learning_rate=2e-5,
        fp16=True,
    )
    Trainer(model=model, args=args, train_dataset=build_dataset()).train()  # realbug: @end

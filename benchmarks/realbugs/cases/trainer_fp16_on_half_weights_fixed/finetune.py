# realbugs-case: twin | family: 2 | shape: - | twin_of: trainer_fp16_on_half_weights
# source: https://github.com/mark1879/Baichuan-13B-Finetuning/issues/21
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

from data import build_dataset


def main(model_path="baichuan-inc/Baichuan-13B-Base"):
    model = AutoModelForCausalLM.from_pretrained(
        model_path, torch_dtype=torch.float32, trust_remote_code=True
    )
    model.gradient_checkpointing_enable()
    args = TrainingArguments(
        output_dir="out",
        per_device_train_batch_size=1,
        gradient_accumulation_steps=8,
        learning_rate=2e-5,
        fp16=True,
    )
    Trainer(model=model, args=args, train_dataset=build_dataset()).train()

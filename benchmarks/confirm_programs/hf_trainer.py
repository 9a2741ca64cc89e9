"""HF Trainer on a tiny Llama config, fp16 mixed precision, as a fine-tuning script is written.

Planted defect (DTL302): the model is created in float16 (`.to(torch.float16)`) and trained with
`fp16=True`: GradScaler refuses float16 gradients ("Attempting to unscale FP16 gradients.").
The clean copy (hf_trainer_fixed.py) keeps float32 weights.
"""
import sys
import tempfile

import torch
from torch.utils.data import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

FIXED = "--fixed" in sys.argv


class Tokens(Dataset):
    def __init__(self, count=64, length=32, vocab=256):
        generator = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (count, length), generator=generator)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64)
model = LlamaForCausalLM(config)
if not FIXED:
    model = model.to(torch.float16)  # defect: DTL302
args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=8, max_steps=6,
                         fp16=torch.cuda.is_available(), learning_rate=1e-3, logging_steps=1, report_to=[],
                         save_strategy="no",
                         dataloader_num_workers=0)
Trainer(model=model, args=args, train_dataset=Tokens()).train()

# realbugs-case: twin | family: 2 | shape: 3 | twin_of: textgen_bf16_flag_ignored
# source: https://github.com/oobabooga/textgen/issues/3460
import torch
import transformers

import shared


def load_model(name):
    return transformers.AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.float32)


def do_train(model_name, dataset, output_dir):
    model = load_model(model_name)
    args = transformers.TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=4,
        learning_rate=3e-4,
        bf16=shared.args.bf16,
        fp16=not shared.args.cpu and not shared.args.bf16,
    )
    trainer = transformers.Trainer(model=model, train_dataset=dataset, args=args)
    trainer.train()

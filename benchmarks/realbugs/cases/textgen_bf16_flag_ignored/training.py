# realbugs-case: bug | family: 2 | shape: 3 | twin: textgen_bf16_flag_ignored_fixed
# source: https://github.com/oobabooga/textgen/issues/3460
# report: the training loop runs in fp16 even with --bf16: TrainingArguments gets fp16=True unless --cpu
import torch
import transformers

import shared


def load_model(name):
    dtype = torch.bfloat16 if shared.args.bf16 else torch.float16
    return transformers.AutoModelForCausalLM.from_pretrained(name, torch_dtype=dtype)  # realbug: @end


def do_train(model_name, dataset, output_dir):
    model = load_model(model_name)
    args = transformers.TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=4,
        learning_rate=3e-4,
        fp16=False if shared.args.cpu else True,  # realbug: f2 s3 @end
    )
    trainer = transformers.Trainer(model=model, train_dataset=dataset, args=args)
    trainer.train()  # realbug: @end

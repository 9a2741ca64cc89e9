# realbugs-case: bug | family: 2 | shape: - | twin: -
# source: https://github.com/QwenLM/Qwen-VL/issues/372
# report: "_amp_foreach_non_finite_check_and_unscale_cuda" not implemented for 'BFloat16' (model.to(torch.bfloat16) + fp16 training)
import torch
import transformers
from dataclasses import dataclass, field


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    model_max_length: int = field(default=2048)


def train():
    parser = transformers.HfArgumentParser((TrainingArguments,))
    (training_args,) = parser.parse_args_into_dataclasses()
    model = transformers.AutoModelForCausalLM.from_pretrained("Qwen/Qwen-VL-Chat", trust_remote_code=True)
    model = model.to(torch.bfloat16)  # realbug: f2 @end
    trainer = transformers.Trainer(model=model, args=training_args, train_dataset=[])
    trainer.train()  # realbug: @end


if __name__ == "__main__":
    train()

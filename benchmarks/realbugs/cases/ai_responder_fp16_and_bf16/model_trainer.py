# realbugs-case: bug | family: 2 | shape: 3 | twin: -
# source: https://github.com/Eiztrips/ai-responder/issues/7
# report: config.yaml enables fp16 and the code adds bf16 on CUDA: At most one of fp16 and bf16 can be True, but not both
import torch
import yaml
from transformers import TrainingArguments


def build_training_args(config_path="config.yaml", output_dir="out"):
    config = yaml.safe_load(open(config_path))
    device_args = dict(config["cuda"])
    if torch.cuda.is_available():
        device_args["bf16"] = True
    return TrainingArguments(output_dir=output_dir, **device_args)  # realbug: f2 s3

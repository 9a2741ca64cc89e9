# realbugs-case: trap | family: 7 | shape: -
# source: https://github.com/Linaqruf/kohya-trainer/issues/246
# looks like: bf16 mixed precision from a flag; it falls back to fp16 when the GPU has no bf16
import argparse

import torch
from accelerate import Accelerator

parser = argparse.ArgumentParser()
parser.add_argument("--mixed_precision", default="bf16", choices=["no", "fp16", "bf16"])
args = parser.parse_args()
mixed_precision = args.mixed_precision
if mixed_precision == "bf16" and not (torch.cuda.is_available() and torch.cuda.is_bf16_supported()):
    mixed_precision = "fp16"
accelerator = Accelerator(mixed_precision=mixed_precision)

# realbugs-case: bug | family: 2 | shape: 3 | twin: -
# source: https://github.com/artidoro/qlora/issues/201
# report: torch_dtype=(torch.float32 if args.fp16 else (torch.bfloat16 if args.bf16 else torch.float32)): --fp16 loads float32
import argparse

import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig


def get_accelerate_model(args):
    compute_dtype = torch.float16 if args.fp16 else (torch.bfloat16 if args.bf16 else torch.float32)
    model = AutoModelForCausalLM.from_pretrained(
        args.model_name_or_path,
        quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=compute_dtype),
        torch_dtype=(torch.float32 if args.fp16 else (torch.bfloat16 if args.bf16 else torch.float32)),  # realbug: s3
    )
    return model


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_name_or_path", default="huggyllama/llama-7b")
    parser.add_argument("--fp16", action="store_true")
    parser.add_argument("--bf16", action="store_true")
    get_accelerate_model(parser.parse_args())

import argparse


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pretrained_model_name_or_path", required=True)
    parser.add_argument("--mixed_precision", choices=["no", "fp16", "bf16"], default="no")
    parser.add_argument("--learning_rate", type=float, default=5e-6)
    args = parser.parse_args()
    args.batches = []
    return args

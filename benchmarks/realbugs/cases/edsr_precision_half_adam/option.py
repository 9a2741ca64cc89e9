# realbugs-case: bug | family: 1,2 | shape: - | twin: edsr_precision_half_adam_fixed
# source: https://github.com/sanghyun-son/EDSR-PyTorch/issues/36
# report: --precision half: the model is halved and trained with Adam (eps=1e-8): "Skip this batch! (Loss: inf)"
import argparse

parser = argparse.ArgumentParser(description="EDSR")
parser.add_argument("--precision", type=str, default="single", choices=("single", "half"))
parser.add_argument("--lr", type=float, default=1e-4)
args = parser.parse_args()

# realbugs-case: twin | family: 1,2 | shape: - | twin_of: edsr_precision_half_adam
# source: https://github.com/sanghyun-son/EDSR-PyTorch/issues/36
import argparse

parser = argparse.ArgumentParser(description="EDSR")
parser.add_argument("--precision", type=str, default="single", choices=("single", "half"))
parser.add_argument("--lr", type=float, default=1e-4)
args = parser.parse_args()

"""Dies on its own command line after a while (issue 12, defect 9): a failure, not a clean run."""
import argparse
import time

import torch

time.sleep(2.5)
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
args = parser.parse_args()
print(torch.ones(1) * args.lr)

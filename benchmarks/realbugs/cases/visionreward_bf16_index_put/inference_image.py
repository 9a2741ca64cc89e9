# realbugs-case: bug | family: 3 | shape: - | twin: -
# source: https://github.com/zai-org/VisionReward/issues/7
# report: --bf16: Index put requires the source and destination dtypes match, got BFloat16 for the destination and Float for the source.
import argparse

import torch

from embed import merge_image_features

parser = argparse.ArgumentParser()
parser.add_argument("--bf16", action="store_true")
args = parser.parse_args()

torch_type = torch.bfloat16 if args.bf16 else torch.float16
inputs_embeds = torch.randn(1, 64, 32).to(torch_type)  # realbug: @end
image_features = torch.randn(16, 32)
positions = torch.arange(8, 24)
merge_image_features(inputs_embeds, image_features, positions)

# realbugs-case: trap | family: 7 | shape: -
# source: https://github.com/karpathy/nanochat/pull/224
# looks like: bfloat16 with no capability check; bf16 autocast on the CPU is supported
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
x = torch.randn(8, 16)
with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    y = model(x)
print(y.float().sum())

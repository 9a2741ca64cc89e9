# realbugs-case: trap | family: 1 | shape: -
# source: https://github.com/afiaka87/glide-finetune/pull/6
# looks like: an optimizer over a half model; plain SGD has no eps to underflow and the loss stays defined
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1)).cuda().half().eval()
with torch.no_grad():
    preds = model(torch.randn(4, 8, device="cuda", dtype=torch.float16))
print(preds.float().mean())

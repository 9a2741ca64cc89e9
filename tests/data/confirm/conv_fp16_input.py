"""An fp16 batch into an fp32 Conv2d: the model was never cast (issue 15, point 2)."""
import torch
from torch import nn

model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))
images = torch.randn(4, 3, 16, 16).half()
logits = model(images)
print(logits.sum())

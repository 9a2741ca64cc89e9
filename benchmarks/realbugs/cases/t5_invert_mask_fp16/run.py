import torch

from modeling_utils import T5Stack

model = T5Stack().cuda().half().eval()
hidden = torch.randn(2, 7, 512, device="cuda", dtype=torch.float16)
mask = torch.ones(2, 7, device="cuda")
mask[:, 5:] = 0
print(model(hidden, mask).isnan().any())

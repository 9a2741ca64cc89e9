"""silent_lowp.py done right: eps representable in float16, a bfloat16-sized learning rate, no toggle."""
import torch
from torch import nn

torch.manual_seed(0)
inputs, targets = torch.randn(32, 16), torch.randn(32, 1)

half_model = nn.Linear(16, 1).half()
half_optimizer = torch.optim.AdamW(half_model.parameters(), lr=1e-3, eps=1e-4)

bf16_model = nn.Linear(16, 1).bfloat16()
bf16_optimizer = torch.optim.SGD(bf16_model.parameters(), lr=1e-1)

toggled_model = nn.Linear(16, 1).half()
toggled_optimizer = torch.optim.SGD(toggled_model.parameters(), lr=1e-2)

for step in range(2):
    for model, optimizer in ((half_model, half_optimizer), (bf16_model, bf16_optimizer),
                             (toggled_model, toggled_optimizer)):
        dtype = next(model.parameters()).dtype
        loss = nn.functional.mse_loss(model(inputs.to(dtype)).float(), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
print("done")

"""Three low-precision defects that never raise and never produce inf/NaN (issue 15, point 6)."""
import torch
from torch import nn

torch.manual_seed(0)
inputs, targets = torch.randn(32, 16), torch.randn(32, 1)

# A half model trained by AdamW with its default eps=1e-8: eps is zero in float16.
half_model = nn.Linear(16, 1).half()
half_optimizer = torch.optim.AdamW(half_model.parameters(), lr=1e-3)

# A bfloat16 model whose updates (lr 1e-6) are far below bfloat16's spacing near its weights.
bf16_model = nn.Linear(16, 1).bfloat16()
bf16_optimizer = torch.optim.SGD(bf16_model.parameters(), lr=1e-6)

# A float16 model made float32 after its first step, and never made half again.
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
    if step == 0:
        toggled_model.float()
print("done")

# realbugs-case: trap | family: 2 | shape: -
# source: https://github.com/karpathy/nanoGPT/pull/277
# looks like: a GradScaler next to a bf16 configuration; it is enabled only for float16
from contextlib import nullcontext

import torch

dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
ptdtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = torch.amp.autocast(device_type="cuda", dtype=ptdtype) if torch.cuda.is_available() else nullcontext()
scaler = torch.amp.GradScaler("cuda", enabled=(dtype == "float16"))

model = torch.nn.Linear(32, 32).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(3):
    with ctx:
        loss = model(torch.randn(4, 32, device="cuda")).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)

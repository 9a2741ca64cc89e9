# realbugs-case: bug | family: 7 | shape: - | twin: nanogpt_bf16_unsupported_gpu_fixed
# source: https://github.com/karpathy/nanoGPT/pull/277
# report: RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to float16. (V100)
from contextlib import nullcontext

import torch

from model import GPT, GPTConfig

device = "cuda"
dtype = "bfloat16"  # realbug: @end  ('float32', 'bfloat16', or 'float16')
exec(open("configurator.py").read())
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)  # realbug: f7 @end
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))

model = GPT(GPTConfig()).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4)
for it in range(10):
    X = torch.randint(0, 50304, (4, 64), device=device)
    with ctx:
        logits, loss = model(X, X)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)

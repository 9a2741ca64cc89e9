"""A two-rank DDP training loop (torchrun), NCCL on CUDA, gloo on the CPU.

Planted defect (DTL703): a precision choice made on one rank only (rank 0 "evaluates" in
float64 and keeps the model that way before wrapping it), so the ranks wrap models of different
dtypes. The clean copy (--fixed) makes the same choice on every rank.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

FIXED = "--fixed" in sys.argv
dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
rank = dist.get_rank()
local_rank = int(os.environ.get("LOCAL_RANK", 0))
device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
if device.type == "cuda":
    torch.cuda.set_device(device)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
if rank == 0 and not FIXED:
    model = model.double()  # defect: DTL703
dtype = next(model.parameters()).dtype
ddp_model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.01)
for step in range(4):
    inputs = torch.randn(8, 16, device=device, dtype=dtype)
    loss = ddp_model(inputs).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
dist.destroy_process_group()

"""Two ranks wrap models whose dtypes differ by rank (issue 15, point 7); run with torchrun."""
import os

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
rank = dist.get_rank()
model = nn.Linear(8, 4)
if rank == 1:
    model = model.double()
ddp_model = nn.parallel.DistributedDataParallel(model)
optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
loss = ddp_model(torch.randn(4, 8, dtype=next(model.parameters()).dtype)).sum()
loss.backward()
optimizer.step()
dist.destroy_process_group()
print("rank", rank, "pid", os.getpid(), "done")

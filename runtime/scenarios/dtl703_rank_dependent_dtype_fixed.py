"""Fixed twin of dtl703_rank_dependent_dtype.py: every rank reduces the same dtype (float64 everywhere).

Run: torchrun --nproc-per-node 2 dtl703_rank_dependent_dtype_fixed.py
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    torch.manual_seed(rank)
    model = DDP(nn.Linear(8, 1).cuda(), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(5):
        x = torch.randn(16, 8, device="cuda")
        loss = (model(x) - 1.0).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        stats = torch.tensor([loss.item(), 1.0], dtype=torch.float64, device="cuda")
        dist.all_reduce(stats)
        if rank == 0:
            print(f"step {step} mean loss {(stats[0] / stats[1]).item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

import torch


def build_dataset(n=16, length=32):
    ids = torch.randint(0, 1000, (n, length))
    return [{"input_ids": row, "labels": row} for row in ids]

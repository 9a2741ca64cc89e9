# realbugs-case: twin | family: 3 | shape: 6 | twin_of: gli_int32_indices_from_npz
# source: https://github.com/Graph-Learning-Benchmarks/gli/issues/474
import numpy as np
import torch


def save_split(path, train_idx):
    np.savez(path, train=np.array(list(train_idx), dtype=np.int64))


def load_split(path, num_nodes):
    split = np.load(path)
    _indices = torch.from_numpy(split["train"]).long()
    mask = torch.zeros(num_nodes, dtype=torch.bool)
    mask[_indices] = True
    return mask

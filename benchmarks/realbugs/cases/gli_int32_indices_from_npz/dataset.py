# realbugs-case: bug | family: 3 | shape: 6 | twin: gli_int32_indices_from_npz_fixed
# source: https://github.com/Graph-Learning-Benchmarks/gli/issues/474
# report: indices saved through a list become an int32 NumPy array; mask[_indices] fails on torch 1.13: tensors used as indices must be long, byte or bool tensors
import numpy as np
import torch


def save_split(path, train_idx):
    np.savez(path, train=np.array(list(train_idx), dtype=np.int32))


def load_split(path, num_nodes):
    split = np.load(path)
    _indices = torch.from_numpy(split["train"])
    mask = torch.zeros(num_nodes, dtype=torch.bool)
    mask[_indices] = True  # realbug: s6
    return mask

# realbugs-case: trap | family: 3 | shape: 6
# source: https://github.com/Graph-Learning-Benchmarks/gli/issues/474
# looks like: indices from NumPy used to index a tensor; they are int64
import numpy as np
import torch

idx = torch.from_numpy(np.arange(0, 100, 2, dtype=np.int64))
mask = torch.zeros(100, dtype=torch.bool)
mask[idx] = True
print(mask.sum())

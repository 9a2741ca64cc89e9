# realbugs-case: trap | family: 3 | shape: - 
# source: https://github.com/pytorch/pytorch/issues/63935
# looks like: a float64 value written into a float32 tensor; a basic-slice assignment copies with a cast and is fine
import torch

grid = torch.zeros((3, 3, 3), dtype=torch.float32)
value = torch.tensor(5, dtype=torch.float64)
grid[:, :, 1] = value
grid[0] = torch.ones(3, 3, dtype=torch.float64)
print(grid.dtype)

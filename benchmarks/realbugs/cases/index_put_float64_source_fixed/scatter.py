# realbugs-case: twin | family: 3 | shape: - | twin_of: index_put_float64_source
# source: https://github.com/pytorch/pytorch/issues/63935
import torch


def scatter_value(grid, rows, value):
    grid[rows, :, 1] = value.to(grid.dtype)
    return grid


grid = torch.zeros((3, 3, 3), dtype=torch.float32)
fill = torch.tensor(5, dtype=torch.float64)
scatter_value(grid, [0, 1, 2], fill)

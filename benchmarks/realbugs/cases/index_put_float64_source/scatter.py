# realbugs-case: bug | family: 3 | shape: - | twin: index_put_float64_source_fixed
# source: https://github.com/pytorch/pytorch/issues/63935
# report: x[[0,1,2],:,1] = y with float32 x and float64 y -> Index put requires the source and destination dtypes match
import torch


def scatter_value(grid, rows, value):
    grid[rows, :, 1] = value  # realbug: f3
    return grid


grid = torch.zeros((3, 3, 3), dtype=torch.float32)
fill = torch.tensor(5, dtype=torch.float64)
scatter_value(grid, [0, 1, 2], fill)

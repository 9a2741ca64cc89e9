"""Writing per-row statistics computed in float64 into a float32 buffer by row number.

Defect (DTL104): `buffer[[0, 2, 4], :] = stats` indexes with a list, which is advanced indexing
(index_put): it never casts and raises "Index put requires the source and destination dtypes
match, got Float for the destination and Double for the source" (pytorch/pytorch#63935).
"""

import torch


def main():
    torch.manual_seed(0)
    buffer = torch.zeros(6, 4)
    samples = torch.randn(3, 100, 4, dtype=torch.float64)
    stats = samples.mean(dim=1)
    buffer[[0, 2, 4], :] = stats  # defect: DTL104
    print(buffer.sum().item())


if __name__ == "__main__":
    main()

"""Fixed twin of dtl104_list_index_float64.py: the statistics are cast to the buffer's dtype."""

import torch


def main():
    torch.manual_seed(0)
    buffer = torch.zeros(6, 4)
    samples = torch.randn(3, 100, 4, dtype=torch.float64)
    stats = samples.mean(dim=1)
    buffer[[0, 2, 4], :] = stats.to(buffer.dtype)
    print(buffer.sum().item())


if __name__ == "__main__":
    main()

"""A float32 model fed the half-precision batch of a `--half` evaluation path.

Defect (DTL108): the model was put back to float32 with `.float()` while the batch is still cast
with `.half()`: "mat1 and mat2 must have the same dtype, but got Half and Float".
"""

import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)
    model = nn.Linear(8, 4)
    model.float()
    batch = torch.randn(2, 8).half()
    print(model(batch))  # defect: DTL108


if __name__ == "__main__":
    main()

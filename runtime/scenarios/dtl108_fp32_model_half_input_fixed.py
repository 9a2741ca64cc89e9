"""Fixed twin of dtl108_fp32_model_half_input.py: the batch is cast to the model's dtype."""

import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)
    model = nn.Linear(8, 4)
    model.float()
    batch = torch.randn(2, 8).half()
    print(model(batch.float()))


if __name__ == "__main__":
    main()

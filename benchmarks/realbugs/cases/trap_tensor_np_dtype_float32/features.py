# realbugs-case: trap | family: 3 | shape: 6
# source: https://github.com/deepset-ai/FARM/issues/758
# looks like: class weights from NumPy into a loss; dtype=torch.float32 is given
import numpy as np
import torch
import torch.nn as nn

counts = np.bincount(np.random.randint(0, 3, 100), minlength=3)
weights = torch.tensor(counts.sum() / (3 * counts), dtype=torch.float32)
criterion = nn.CrossEntropyLoss(weight=weights)
print(criterion(torch.randn(4, 3), torch.randint(0, 3, (4,))))

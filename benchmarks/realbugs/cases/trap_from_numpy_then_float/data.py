# realbugs-case: trap | family: 3 | shape: 6
# source: https://github.com/OUCMachineLearning/OUCML/issues/24
# looks like: NumPy float64 data fed to a float32 model; the .float() makes it float32
import numpy as np
import torch
import torch.nn as nn

features = torch.from_numpy(np.random.normal(0, 1, (100, 2))).float()
labels = torch.tensor(np.random.rand(100, 1), dtype=torch.float32)
model = nn.Linear(2, 1)
loss = nn.functional.mse_loss(model(features), labels)
loss.backward()

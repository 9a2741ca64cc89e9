# realbugs-case: twin | family: 3 | shape: 6 | twin_of: d2l_from_numpy_float64_mm
# source: https://github.com/OUCMachineLearning/OUCML/issues/24
import numpy as np
import torch

num_inputs, num_examples = 2, 1000
true_w, true_b = [2, -3.4], 4.2
features = torch.from_numpy(np.random.normal(0, 1, (num_examples, num_inputs))).to(torch.float32)
labels = true_w[0] * features[:, 0] + true_w[1] * features[:, 1] + true_b

w = torch.tensor(np.random.normal(0, 0.01, (num_inputs, 1)), dtype=torch.float32)
b = torch.zeros(1, dtype=torch.float32)
w.requires_grad_(True)
b.requires_grad_(True)


def linreg(X, w, b):
    return torch.mm(X, w) + b


for epoch in range(3):
    loss = ((linreg(features, w, b) - labels.view(-1, 1)) ** 2 / 2).sum()
    loss.backward()

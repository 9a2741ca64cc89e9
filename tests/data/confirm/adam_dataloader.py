"""Adam/AdamW/Adadelta steps and a pinned-memory DataLoader with a worker, written for CUDA."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = DataLoader(data, batch_size=16, pin_memory=True, num_workers=1)
models = [nn.Linear(8, 1).to(device) for _ in range(3)]
optimizers = [torch.optim.Adam(models[0].parameters()), torch.optim.AdamW(models[1].parameters()),
              torch.optim.Adadelta(models[2].parameters())]
for inputs, targets in loader:
    inputs, targets = inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)
    for model, optimizer in zip(models, optimizers):
        loss = nn.functional.mse_loss(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
print("trained on", device)

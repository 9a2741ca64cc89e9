# realbugs-case: bug | family: 3 | shape: 6 | twin: -
# source: https://github.com/sebsk/CS224N-Project/pull/2
# report: train_label_weight built from label counts with NumPy, used as the CrossEntropyLoss weight -> expected scalar type Float but found Double
import numpy as np
import torch
import torch.nn as nn


def label_weights(train_labels, num_classes):
    counts = np.bincount(train_labels, minlength=num_classes)
    return torch.from_numpy(counts.sum() / (num_classes * counts))  # realbug: @end


def train(model, loader, train_labels, num_classes=3):
    criterion = nn.CrossEntropyLoss(weight=label_weights(train_labels, num_classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in loader:
        loss = criterion(model(x), y)  # realbug: f3 s6 @end
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

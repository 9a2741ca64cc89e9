# realbugs-case: bug | family: 3 | shape: 6 | twin: farm_class_weights_float64_fixed
# source: https://github.com/deepset-ai/FARM/issues/758
# report: class weights computed with sklearn/NumPy reach CrossEntropyLoss -> expected scalar type Float but found Double
import numpy as np
import torch
from sklearn.utils.class_weight import compute_class_weight
from torch import nn


def calculate_class_weights(labels, num_labels):
    return compute_class_weight("balanced", classes=np.arange(num_labels), y=labels)


class TextClassificationHead(nn.Module):
    def __init__(self, hidden, num_labels, class_weights=None):
        super().__init__()
        self.feed_forward = nn.Linear(hidden, num_labels)
        weight = torch.tensor(class_weights) if class_weights is not None else None  # realbug: @end
        self.loss_fct = nn.CrossEntropyLoss(weight=weight)

    def logits_to_loss(self, logits, label_ids):
        return self.loss_fct(logits, label_ids.view(-1))  # realbug: f3 s6 @end

# realbugs-case: twin | family: 1,6 | shape: - | twin_of: apex_path_mask_amp
# source: https://github.com/NVIDIA/apex/issues/1052
import torch
import torch.nn as nn


class PathReasoner(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)

    def forward(self, h, path_mask):
        scores = torch.matmul(self.query(h), self.key(h).transpose(-1, -2))
        scores_mask = scores.masked_fill(~path_mask.unsqueeze(-1), torch.finfo(scores.dtype).min)
        return scores_mask.softmax(-1)

# realbugs-case: bug | family: 1,6 | shape: - | twin: apex_path_mask_amp_fixed
# source: https://github.com/NVIDIA/apex/issues/1052
# report: scores.masked_fill(~path_mask.unsqueeze(-1), -1e9) under mixed precision -> cannot be converted to at::Half
import torch
import torch.nn as nn


class PathReasoner(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)

    def forward(self, h, path_mask):
        scores = torch.matmul(self.query(h), self.key(h).transpose(-1, -2))
        scores_mask = scores.masked_fill(~path_mask.unsqueeze(-1), -1e9)  # realbug: f1
        return scores_mask.softmax(-1)

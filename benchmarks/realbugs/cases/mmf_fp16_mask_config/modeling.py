# realbugs-case: bug | family: 2 | shape: - | twin: -
# source: https://github.com/facebookresearch/mmf/pull/962
# report: "-1e9" induces "value cannot be converted to type at::Half without overflow" when training.fp16=true
import torch
import torch.nn as nn


class VideoTextEncoder(nn.Module):
    def __init__(self, hidden=768):
        super().__init__()
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)

    def forward(self, feats, attention_mask):
        scores = self.query(feats) @ self.key(feats).transpose(-1, -2)
        scores = scores.masked_fill(attention_mask[:, None, :] == 0, -1e9)  # realbug: f2
        return scores.softmax(-1) @ feats

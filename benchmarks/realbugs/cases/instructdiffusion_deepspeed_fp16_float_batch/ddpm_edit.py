# realbugs-case: bug | family: 2 | shape: - | twin: -
# source: https://github.com/cientgu/InstructDiffusion/issues/22
# report: DeepSpeed fp16: get_input hands float32 batch tensors to the fp16 engine -> expected scalar type Half but found Float
import torch
import torch.nn as nn


class LatentDiffusion(nn.Module):
    def __init__(self):
        super().__init__()
        self.first_stage = nn.Conv2d(3, 4, 8, stride=8)
        self.cond_stage = nn.Linear(77, 64)

    def get_input(self, batch, k):
        x = batch[k]
        x = x.permute(0, 3, 1, 2).to(memory_format=torch.contiguous_format).float()
        return self.first_stage(x), self.cond_stage(batch["txt"].float())  # realbug: f2 @end

    def forward(self, batch):
        z, c = self.get_input(batch, "edited")
        return z.pow(2).mean() + c.pow(2).mean()

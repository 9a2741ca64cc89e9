# realbugs-case: bug | family: 1 | shape: 1 | twin: t5_invert_mask_fp16_fixed
# source: https://github.com/huggingface/transformers/pull/4436
# report: T5 in fp16: (1.0 - mask) * -1e9 in invert_attention_mask overflows (issue #4287)
import torch
import torch.nn as nn


class ModuleUtilsMixin:
    @property
    def dtype(self):
        return next(self.parameters()).dtype

    def invert_attention_mask(self, encoder_attention_mask):
        extended = encoder_attention_mask[:, None, None, :]
        extended = extended.to(dtype=self.dtype)  # fp16 compatibility
        return (1.0 - extended) * -1e9  # realbug: f1 s1


class T5Stack(nn.Module, ModuleUtilsMixin):
    def __init__(self, d_model=512):
        nn.Module.__init__(self)
        self.q = nn.Linear(d_model, d_model, bias=False)

    def forward(self, hidden, encoder_attention_mask):
        q = self.q(hidden)
        scores = q @ q.transpose(-1, -2) + self.invert_attention_mask(encoder_attention_mask)
        return scores.softmax(-1) @ q

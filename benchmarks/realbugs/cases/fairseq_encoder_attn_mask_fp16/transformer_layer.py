# realbugs-case: bug | family: 1 | shape: - | twin: fairseq_encoder_attn_mask_fp16_fixed
# source: https://github.com/facebookresearch/fairseq/issues/3575
# report: with --fp16, RuntimeError: value cannot be converted to type at::Half without overflow: -1e+08
import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, padding_mask, attn_mask=None):
        if attn_mask is not None:
            # the user mask is 1 where attention is forbidden
            attn_mask = attn_mask.masked_fill(attn_mask.to(torch.bool), -1e8)  # realbug: f1
        out, _ = self.attn(x, x, x, key_padding_mask=padding_mask, attn_mask=attn_mask)
        return self.norm(x + out)

# realbugs-case: twin | family: 1 | shape: - | twin_of: fairseq_encoder_attn_mask_fp16
# source: https://github.com/facebookresearch/fairseq/issues/3575
# fix: fill with a value the mask's own dtype can hold
import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, padding_mask, attn_mask=None):
        if attn_mask is not None:
            fill = -1e8 if x.dtype == torch.float32 else -1e4
            attn_mask = attn_mask.masked_fill(attn_mask.to(torch.bool), fill)
        out, _ = self.attn(x, x, x, key_padding_mask=padding_mask, attn_mask=attn_mask)
        return self.norm(x + out)

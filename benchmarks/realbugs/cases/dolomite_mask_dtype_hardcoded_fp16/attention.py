# realbugs-case: bug | family: - | shape: 1,3 | twin: -
# source: https://github.com/ibm-granite/dolomite-engine/pull/109
# report: the causal mask was built with a hard-coded torch.float16 instead of the model dtype (bf16 runs mix dtypes)
import torch
import torch.nn.functional as F


def get_causal_mask(attention_mask, query_length, key_length, device):
    causal = torch.tril(torch.ones(query_length, key_length, device=device, dtype=torch.bool))
    mask = causal[None] & attention_mask[:, None, :].bool()
    mask_dtype = torch.float16  # realbug: @end
    return torch.zeros(mask.shape, dtype=mask_dtype, device=device).masked_fill(~mask, torch.finfo(mask_dtype).min)


def attention(q, k, v, attention_mask):
    mask = get_causal_mask(attention_mask, q.shape[-2], k.shape[-2], q.device)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None])  # realbug: s1 s3 @end

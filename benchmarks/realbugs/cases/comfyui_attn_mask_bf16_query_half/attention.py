# realbugs-case: bug | family: - | shape: 1 | twin: -
# source: https://github.com/Comfy-Org/ComfyUI/issues/8118
# report: Expected attn_mask dtype to be bool or float or to match query dtype, got attn_mask BFloat16 and query Half
import torch
import torch.nn.functional as F


def prepare_mask(mask, dtype=torch.bfloat16):
    mask = mask.to(dtype)  # realbug: @end
    return (1.0 - mask) * -10000.0


def attention_pytorch(q, k, v, heads, mask=None):
    b, _, dim_head = q.shape
    dim_head //= heads
    q, k, v = (t.view(b, -1, heads, dim_head).transpose(1, 2) for t in (q, k, v))
    if mask is not None:
        mask = prepare_mask(mask)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # realbug: s1 @end
    return out.transpose(1, 2).reshape(b, -1, heads * dim_head)

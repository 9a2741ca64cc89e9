# realbugs-case: bug | family: - | shape: 1,3 | twin: -
# source: https://github.com/xjdr-alt/entropix/pull/59
# report: RuntimeError: expected scalar type BFloat16 but found Float: apply_rotary_emb returns float32 for bfloat16 weights
import torch


def apply_rotary_emb(xq, xk, freqs_cis, dtype: torch.dtype = torch.float32):
    reshape_xq = xq.float().reshape(*xq.shape[:-1], -1, 2)
    reshape_xk = xk.float().reshape(*xk.shape[:-1], -1, 2)
    xq_ = torch.complex(reshape_xq[..., 0], reshape_xq[..., 1])
    xk_ = torch.complex(reshape_xk[..., 0], reshape_xk[..., 1])
    xq_out = torch.view_as_real(xq_ * freqs_cis[None, :, None, :]).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis[None, :, None, :]).flatten(3)
    return xq_out.to(dtype), xk_out.to(dtype)  # realbug: @end


def attention(x, wq, wk, wv, freqs_cis, n_heads):
    bsz, seqlen, _ = x.shape
    xq = torch.nn.functional.linear(x, wq).view(bsz, seqlen, n_heads, -1)
    xk = torch.nn.functional.linear(x, wk).view(bsz, seqlen, n_heads, -1)
    xv = torch.nn.functional.linear(x, wv).view(bsz, seqlen, n_heads, -1)
    xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
    scores = torch.einsum("bihd,bjhd->bhij", xq, xk)  # realbug: s1 @end
    return torch.einsum("bhij,bjhd->bihd", scores.softmax(-1), xv)

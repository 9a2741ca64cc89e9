# realbugs-case: bug | family: - | shape: 1 | twin: -
# source: https://github.com/AUTOMATIC1111/stable-diffusion-webui/pull/498
# report: the split-attention output buffer r1 is created with torch.zeros(...) and no dtype: fp32 work in an fp16 model
import torch
from torch import einsum


def split_cross_attention_forward(self, x, context=None, mask=None):
    h = self.heads
    q_in = self.to_q(x)
    context = context if context is not None else x
    k_in, v_in = self.to_k(context), self.to_v(context)
    q, k, v = (t.reshape(t.shape[0], t.shape[1], h, -1).transpose(1, 2).flatten(0, 1) for t in (q_in, k_in, v_in))
    r1 = torch.zeros(q.shape[0], q.shape[1], v.shape[2], device=q.device)  # realbug: s1 @end
    for i in range(0, q.shape[0], 2):
        end = i + 2
        s1 = einsum("b i d, b j d -> b i j", q[i:end], k[i:end]) * self.scale
        r1[i:end] = einsum("b i j, b j d -> b i d", s1.softmax(dim=-1), v[i:end])
    return self.to_out(r1.unflatten(0, (-1, h)).transpose(1, 2).flatten(2))  # realbug: @end

# realbugs-case: bug | family: - | shape: 1,3 | twin: -
# source: https://github.com/XLabs-AI/x-flux-comfyui/pull/177
# report: the IP-adapter processor casts with a hard-coded torch.bfloat16 while the model runs in fp16 -> Expected query, key, and value to have the same dtype
import torch
import torch.nn.functional as F
from torch import nn


class IPProcessor(nn.Module):
    def __init__(self, context_dim, hidden_dim):
        super().__init__()
        self.ip_k = nn.Linear(context_dim, hidden_dim)
        self.ip_v = nn.Linear(context_dim, hidden_dim)

    def forward(self, img_q, image_proj, ip_scale=1.0):
        ip_k = self.ip_k(image_proj).to(torch.bfloat16)  # realbug: @end
        ip_v = self.ip_v(image_proj).to(torch.bfloat16)
        ip_attn = F.scaled_dot_product_attention(img_q, ip_k, ip_v)  # realbug: s1 s3 @end
        return ip_scale * ip_attn

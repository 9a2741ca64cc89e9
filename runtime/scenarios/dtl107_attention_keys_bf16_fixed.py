"""An IP-adapter style attention block whose keys follow the query's dtype.

Fixed: the keys and values are cast with `.to(query.dtype)` instead of a hard-coded
`torch.bfloat16`, so `F.scaled_dot_product_attention` gets one dtype (XLabs-AI/x-flux-comfyui#177).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    to_k = nn.Linear(32, 16).half()
    to_v = nn.Linear(32, 16).half()
    query = torch.randn(1, 4, 16).half()
    image_embeds = torch.randn(1, 3, 32).half()
    keys = to_k(image_embeds).to(query.dtype)
    values = to_v(image_embeds).to(query.dtype)
    out = F.scaled_dot_product_attention(query, keys, values)
    print(f"attention mean {out.float().mean().item():.4f}")


if __name__ == "__main__":
    main()

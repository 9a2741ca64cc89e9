"""An IP-adapter style attention block whose keys are cast to a hard-coded bfloat16.

Defect (DTL107): the query arrives in float16 (the model's dtype) while the keys and values are
cast with `.to(torch.bfloat16)`: `F.scaled_dot_product_attention` does not promote and raises
"Expected query, key, and value to have the same dtype" (XLabs-AI/x-flux-comfyui#177).
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
    keys = to_k(image_embeds).to(torch.bfloat16)
    values = to_v(image_embeds).to(torch.bfloat16)
    out = F.scaled_dot_product_attention(query, keys, values)  # defect: DTL107
    print(f"attention mean {out.float().mean().item():.4f}")


if __name__ == "__main__":
    main()

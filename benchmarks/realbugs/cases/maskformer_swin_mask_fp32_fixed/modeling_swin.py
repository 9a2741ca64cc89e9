# realbugs-case: twin | family: - | shape: 1 | twin_of: maskformer_swin_mask_fp32
# source: https://github.com/huggingface/transformers/issues/47743
import torch
import torch.nn as nn


class SwinLayer(nn.Module):
    def __init__(self, dim, window_size, shift_size):
        super().__init__()
        self.window_size = window_size
        self.shift_size = shift_size
        self.qkv = nn.Linear(dim, dim * 3)

    def get_attn_mask(self, height, width, dtype, device):
        img_mask = torch.zeros((1, height, width, 1), dtype=dtype, device=device)
        cnt = 0
        for h in (slice(0, -self.window_size), slice(-self.window_size, None)):
            for w in (slice(0, -self.window_size), slice(-self.window_size, None)):
                img_mask[:, h, w, :] = cnt
                cnt += 1
        windows = img_mask.view(-1, self.window_size * self.window_size)
        attn_mask = windows.unsqueeze(1) - windows.unsqueeze(2)
        return attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)

    def forward(self, hidden_states, height, width):
        q, k, v = self.qkv(hidden_states).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2)
        scores = scores + self.get_attn_mask(height, width, scores.dtype, scores.device)
        return scores.softmax(-1) @ v

"""Evaluating a super-resolution model in half precision with an SSIM metric.

Defect (DTL107): the SSIM Gaussian window is built once with the default float32 dtype, and
`F.conv2d` gets half images and that float32 window: outside autocast the convolution does not
promote and raises "expected scalar type Half but found Float" (NVIDIA/apex#965).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def gaussian_window(size=5, sigma=1.5, channels=3):
    coords = torch.arange(size, dtype=torch.float32) - size // 2
    g = torch.exp(-(coords**2) / (2 * sigma**2))
    g = (g / g.sum()).unsqueeze(0)
    return (g.t() @ g).expand(channels, 1, size, size).contiguous()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))
    model = model.to(device).half().eval()
    window = gaussian_window().to(device)
    low = torch.rand(2, 3, 16, 16, device=device).half()
    with torch.no_grad():
        sr = model(low)
        mu = F.conv2d(sr, window, padding=2, groups=3)  # defect: DTL107
    print(f"local mean {mu.float().mean().item():.4f}")


if __name__ == "__main__":
    main()

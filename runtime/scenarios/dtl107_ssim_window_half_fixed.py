"""Fixed twin of dtl107_ssim_window_half.py: the window follows the images' dtype."""

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
        mu = F.conv2d(sr, window.to(sr.dtype), padding=2, groups=3)
    print(f"local mean {mu.float().mean().item():.4f}")


if __name__ == "__main__":
    main()

# realbugs-case: bug | family: 3 | shape: 1 | twin: conv_filter_float_on_half_images_fixed
# source: https://github.com/NVIDIA/apex/issues/965
# report: a hand-built float32 filter convolved with half activations -> expected scalar type Float but found Half
import torch
import torch.nn.functional as F


def gaussian_window(size=11, sigma=1.5, channels=3):
    coords = torch.arange(size, dtype=torch.float32) - size // 2
    g = torch.exp(-(coords**2) / (2 * sigma**2))
    g = (g / g.sum()).unsqueeze(0)
    window = (g.t() @ g).expand(channels, 1, size, size).contiguous()
    return window


def ssim(img1, img2, size=11):
    window = gaussian_window(size, channels=img1.shape[1]).to(img1.device)  # realbug: @end
    mu1 = F.conv2d(img1, window, padding=size // 2, groups=img1.shape[1])  # realbug: f3 s1 @end
    mu2 = F.conv2d(img2, window, padding=size // 2, groups=img2.shape[1])
    return (2 * mu1 * mu2 + 1e-4) / (mu1**2 + mu2**2 + 1e-4)

# realbugs-case: bug | family: 1 | shape: 2 | twin: -
# source: https://github.com/ml-research/ledits_pp/issues/3
# report: the pipeline created with torch_dtype=torch.float16: the edit-guidance threshold uses torch.quantile -> quantile() input tensor must be either float or double dtype
import torch


class LEditsPipeline:
    def __init__(self, unet, dtype=torch.float32):
        self.unet = unet.to(dtype)
        self.dtype = dtype

    def edit_guidance(self, noise_pred_edit, threshold=0.9):
        tmp = torch.abs(noise_pred_edit)
        flat = tmp.flatten(start_dim=2).to(self.dtype)
        cutoff = torch.quantile(flat, threshold, dim=2, keepdim=False)  # realbug: s2 @q
        return torch.where(tmp >= cutoff[:, :, None, None], noise_pred_edit, torch.zeros_like(noise_pred_edit))

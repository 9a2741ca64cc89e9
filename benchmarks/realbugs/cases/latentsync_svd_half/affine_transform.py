# realbugs-case: bug | family: 1 | shape: 2 | twin: latentsync_svd_half_fixed
# source: https://github.com/bytedance/LatentSync/issues/241
# report: U, S, V = torch.svd(covariance) -> "svd_cuda_gesvdjBatched" not implemented for 'Half'
import torch


class AlignRestore:
    def __init__(self, dtype=torch.float16):
        self.dtype = dtype

    def transformation_from_points(self, points1, points0):
        points1 = points1.to(self.dtype)
        points0 = points0.to(self.dtype)
        mean1, mean0 = points1.mean(0), points0.mean(0)
        points1, points0 = points1 - mean1, points0 - mean0
        covariance = points0.T @ points1
        U, S, V = torch.svd(covariance)  # realbug: s2 f1
        R = (U @ V.T).T
        return torch.cat([R, (mean1 - R @ mean0)[:, None]], dim=1)

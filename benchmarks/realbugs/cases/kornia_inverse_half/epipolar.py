# realbugs-case: bug | family: - | shape: 2 | twin: -
# source: https://github.com/kornia/kornia/issues/649
# report: float16 inputs: "inverse_cuda" / "lu_cuda" / "svd_cuda" not implemented for 'Half'
import torch


def essential_from_fundamental(F_mat, K1, K2):
    return K2.transpose(-2, -1) @ F_mat @ K1


def fundamental_from_essential(E_mat, K1, K2):
    return torch.inverse(K2).transpose(-2, -1) @ E_mat @ torch.inverse(K1)  # realbug: s2


def check_roundtrip(device="cuda"):
    dtype = torch.float16
    K = torch.eye(3, device=device, dtype=dtype)[None]
    F_mat = torch.rand(1, 3, 3, device=device, dtype=dtype)
    E = essential_from_fundamental(F_mat, K, K)
    return fundamental_from_essential(E, K, K)

"""Procrustes alignment of float16 landmarks (bytedance/LatentSync#241).

Defect (DTL509): `torch.svd` has no float16 kernel (cuSOLVER/MAGMA on CUDA, LAPACK on CPU):
the call raises `"linalg_svd_cpu" not implemented for 'Half'`.
"""

import torch


def align(points1, points2):
    points1 = points1.half()
    points2 = points2.half()
    covariance = (points1 - points1.mean(0)).T @ (points2 - points2.mean(0))
    U, S, V = torch.svd(covariance)  # defect: DTL509
    return (U @ V.T).T


def main():
    torch.manual_seed(0)
    landmarks = torch.randn(68, 2)
    print(align(landmarks, landmarks + 0.1))


if __name__ == "__main__":
    main()

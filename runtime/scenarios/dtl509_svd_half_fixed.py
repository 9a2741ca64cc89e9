"""Fixed twin of dtl509_svd_half.py: the SVD runs in float32 and the rotation is cast back."""

import torch


def align(points1, points2):
    points1 = points1.half()
    points2 = points2.half()
    covariance = (points1 - points1.mean(0)).T @ (points2 - points2.mean(0))
    U, S, V = torch.svd(covariance.float())
    return (U @ V.T).T.to(points1.dtype)


def main():
    torch.manual_seed(0)
    landmarks = torch.randn(68, 2)
    print(align(landmarks, landmarks + 0.1))


if __name__ == "__main__":
    main()

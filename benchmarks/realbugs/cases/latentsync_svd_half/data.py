import torch

from affine_transform import AlignRestore

restorer = AlignRestore(dtype=torch.float16)


def align_face(landmarks, template):
    return restorer.transformation_from_points(landmarks.cuda(), template.cuda())

# realbugs-case: trap | family: 3 | shape: 6
# source: https://github.com/alvinliu0/HumanGaussian/issues/18
# looks like: camera parameters from NumPy; astype(np.float32) keeps them float32
import numpy as np
import torch
import torch.nn as nn


def random_camera(batch):
    cams = np.stack([np.random.uniform(-10, 45, batch), np.random.uniform(-180, 180, batch)], axis=-1)
    return torch.from_numpy(cams.astype(np.float32))


embed = nn.Linear(2, 16)
print(embed(random_camera(4)).shape)

# realbugs-case: bug | family: 3 | shape: 6 | twin: -
# source: https://github.com/alvinliu0/HumanGaussian/issues/18
# report: RuntimeError: expected scalar type Float but found Double (camera parameters built with NumPy)
import numpy as np
import torch


def random_camera(batch):
    elevation = np.random.uniform(-10, 45, batch)
    azimuth = np.random.uniform(-180, 180, batch)
    radius = np.random.uniform(3.0, 3.5, batch)
    cams = np.stack([elevation, azimuth, radius], axis=-1)
    return torch.from_numpy(cams)  # realbug: @end

import torch


def merge_image_features(inputs_embeds: torch.Tensor, image_features: torch.Tensor, positions):
    inputs_embeds[0, positions] = image_features  # realbug: f3 @end
    return inputs_embeds

# realbugs-case: twin | family: - | shape: 4 | twin_of: unet_clip_before_unscale
# source: https://github.com/milesial/Pytorch-UNet/pull/470
import argparse

import torch
import torch.nn as nn


def train_model(model, device, loader, learning_rate=1e-5, amp=False, gradient_clipping=1.0):
    optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate, weight_decay=1e-8, momentum=0.999)
    grad_scaler = torch.cuda.amp.GradScaler(enabled=amp)
    criterion = nn.CrossEntropyLoss()
    for images, true_masks in loader:
        images = images.to(device=device, dtype=torch.float32)
        true_masks = true_masks.to(device=device, dtype=torch.long)
        with torch.autocast(device.type if device.type != "mps" else "cpu", enabled=amp):
            masks_pred = model(images)
            loss = criterion(masks_pred, true_masks)
        optimizer.zero_grad(set_to_none=True)
        grad_scaler.scale(loss).backward()
        grad_scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clipping)
        grad_scaler.step(optimizer)
        grad_scaler.update()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--amp", action="store_true")
    args = parser.parse_args()

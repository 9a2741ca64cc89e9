# realbugs-case: bug | family: 6 | shape: 4 | twin: -
# source: https://github.com/ultralytics/yolov5/issues/11746
# report: NaN predictions on a GTX 16xx; the workaround autocast(enabled=True, dtype=torch.float32) is not a float32 region at all on CUDA
import torch


def train_epoch(model, optimizer, dataloader, compute_loss, amp=True):
    scaler = torch.cuda.amp.GradScaler(enabled=amp)
    for imgs, targets in dataloader:
        imgs = imgs.cuda(non_blocking=True).float() / 255
        with torch.cuda.amp.autocast(enabled=amp, dtype=torch.float32):  # realbug: f6 s4
            pred = model(imgs)
            loss, loss_items = compute_loss(pred, targets.cuda())
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()

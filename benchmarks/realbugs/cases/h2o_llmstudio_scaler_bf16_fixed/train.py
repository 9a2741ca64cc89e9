# realbugs-case: twin | family: 2 | shape: - | twin_of: h2o_llmstudio_scaler_bf16
# source: https://github.com/h2oai/h2o-llmstudio/issues/628
import torch
from torch.amp import GradScaler, autocast

from config import cfg


def run_train(model, optimizer, loader):
    dtype = getattr(torch, cfg.architecture.backbone_dtype)
    use_scaler = cfg.environment.mixed_precision and dtype == torch.float16
    scaler = GradScaler("cuda") if use_scaler else None
    for batch in loader:
        with autocast("cuda", dtype=dtype, enabled=cfg.environment.mixed_precision):
            loss = model(**batch)["loss"]
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad()

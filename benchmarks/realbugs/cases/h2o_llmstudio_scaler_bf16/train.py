# realbugs-case: bug | family: 2 | shape: - | twin: h2o_llmstudio_scaler_bf16_fixed
# source: https://github.com/h2oai/h2o-llmstudio/issues/628
# report: dtype=bfloat16 with mixed precision: GradScaler used for bf16 -> _amp_foreach_non_finite_check_and_unscale_cuda not implemented for 'BFloat16'
import torch
from torch.cuda.amp import GradScaler, autocast

from config import cfg


def run_train(model, optimizer, loader):
    dtype = getattr(torch, cfg.architecture.backbone_dtype)
    model = model.to(dtype)
    scaler = GradScaler() if cfg.environment.mixed_precision else None  # realbug: @end
    for batch in loader:
        with autocast(enabled=cfg.environment.mixed_precision):
            loss = model(**batch)["loss"]
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)  # realbug: f2 @end
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad()

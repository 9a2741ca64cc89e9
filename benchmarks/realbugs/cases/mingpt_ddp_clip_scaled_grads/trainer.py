# realbugs-case: bug | family: 6 | shape: 4 | twin: -
# source: https://github.com/pytorch/examples/issues/1196
# report: minGPT-ddp trainer clips with clip_grad_norm_ after scaler.scale(loss).backward() without scaler.unscale_
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, config, model, optimizer, train_loader):
        self.config = config
        self.local_rank = 0
        self.model = DDP(model.to(self.local_rank), device_ids=[self.local_rank])
        self.optimizer = optimizer
        self.train_loader = train_loader
        if self.config.use_amp:
            self.scaler = torch.cuda.amp.GradScaler()

    def _run_batch(self, source, targets, train: bool = True):
        with torch.set_grad_enabled(train), torch.amp.autocast(
            device_type="cuda", dtype=torch.float16, enabled=self.config.use_amp
        ):
            _, loss = self.model(source, targets)
        if train:
            self.optimizer.zero_grad(set_to_none=True)
            if self.config.use_amp:
                self.scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_norm_clip)  # realbug: s4
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_norm_clip)
                self.optimizer.step()
        return loss.item()

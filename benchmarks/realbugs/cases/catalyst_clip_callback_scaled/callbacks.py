# realbugs-case: bug | family: 6 | shape: 4 | twin: -
# source: https://github.com/catalyst-team/catalyst/issues/1319
# report: OptimizerCallback clips gradients right after the engine's scaled backward; unscale happens later in optimizer_step
import torch


class AMPEngine:
    def __init__(self):
        self.scaler = torch.cuda.amp.GradScaler()

    def backward_loss(self, loss, model, optimizer):
        self.scaler.scale(loss).backward()

    def optimizer_step(self, loss, model, optimizer):
        self.scaler.step(optimizer)
        self.scaler.update()


class OptimizerCallback:
    def __init__(self, grad_clip_fn=None, accumulation_steps=1):
        self.grad_clip_fn = grad_clip_fn
        self.accumulation_steps = accumulation_steps
        self._accumulation_counter = 0

    def on_batch_end(self, runner):
        self._accumulation_counter += 1
        need_step = self._accumulation_counter % self.accumulation_steps == 0
        runner.engine.backward_loss(runner.loss, runner.model, runner.optimizer)
        if self.grad_clip_fn is not None:
            self.grad_clip_fn(runner.model.parameters())  # realbug: f6 s4
        if need_step:
            runner.engine.optimizer_step(runner.loss, runner.model, runner.optimizer)
            runner.optimizer.zero_grad()

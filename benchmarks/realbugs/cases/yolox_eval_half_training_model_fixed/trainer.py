# realbugs-case: twin | family: 5 | shape: - | twin_of: yolox_eval_half_training_model
# source: https://github.com/Megvii-BaseDetection/YOLOX/issues/908
from copy import deepcopy

import torch

from evaluator import COCOEvaluator


class Trainer:
    def __init__(self, model, optimizer, loader, args):
        self.model = model
        self.optimizer = optimizer
        self.loader = loader
        self.args = args
        self.scaler = torch.cuda.amp.GradScaler(enabled=args.fp16)
        self.evaluator = COCOEvaluator()

    def train_one_epoch(self):
        self.model.train()
        for imgs, targets in self.loader:
            with torch.cuda.amp.autocast(enabled=self.args.fp16):
                loss = self.model(imgs, targets)["total_loss"]
            self.optimizer.zero_grad()
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()

    def train(self, epochs):
        for epoch in range(epochs):
            self.train_one_epoch()
            self.evaluate_and_save_model()

    def evaluate_and_save_model(self):
        evalmodel = deepcopy(self.model)
        ap50 = self.evaluator.evaluate(evalmodel, half=self.args.fp16)
        torch.save(self.model.state_dict(), f"ckpt_{ap50:.3f}.pth")

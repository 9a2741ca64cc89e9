import torch

from FEDformer import FourierBlock


class Exp:
    def __init__(self, args):
        self.args = args
        self.model = FourierBlock(args.d_model).cuda()

    def train(self, loader):
        optim = torch.optim.Adam(self.model.parameters(), lr=self.args.learning_rate)
        scaler = torch.cuda.amp.GradScaler() if self.args.use_amp else None
        for batch_x, batch_y in loader:
            if self.args.use_amp:
                with torch.cuda.amp.autocast():
                    outputs = self.model(batch_x.cuda())
                    loss = torch.nn.functional.mse_loss(outputs, batch_y.cuda())
                scaler.scale(loss).backward()
                scaler.step(optim)
                scaler.update()
            else:
                loss = torch.nn.functional.mse_loss(self.model(batch_x.cuda()), batch_y.cuda())
                loss.backward()
                optim.step()
            optim.zero_grad()

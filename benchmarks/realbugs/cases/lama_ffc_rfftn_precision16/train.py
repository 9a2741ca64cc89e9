import lightning.pytorch as pl
import torch

from ffc import FourierUnit


class InpaintingModule(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.generator = FourierUnit(4, 4)

    def training_step(self, batch, batch_idx):
        img, mask = batch
        pred = self.generator(torch.cat([img, mask], 1))
        return torch.nn.functional.l1_loss(pred[:, :3], img)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


trainer = pl.Trainer(accelerator="gpu", devices=1, precision=16, max_epochs=1)
trainer.fit(InpaintingModule(), train_dataloaders=[])

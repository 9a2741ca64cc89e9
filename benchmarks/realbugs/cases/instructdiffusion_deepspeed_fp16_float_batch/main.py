import deepspeed

from ddpm_edit import LatentDiffusion

ds_config = {
    "train_micro_batch_size_per_gpu": 4,
    "fp16": {"enabled": True, "loss_scale": 0, "initial_scale_power": 16},  # realbug: @end
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
}


def train(loader):
    model = LatentDiffusion()
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config)
    for batch in loader:
        loss = engine(batch)
        engine.backward(loss)
        engine.step()

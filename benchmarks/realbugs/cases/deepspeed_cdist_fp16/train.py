import deepspeed

from geometry import PairwiseDistanceHead

config = {"train_batch_size": 8, "fp16": {"enabled": True}, "optimizer": {"type": "Adam", "params": {"lr": 1e-4}}}


def train(loader):
    model = PairwiseDistanceHead()
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    for coords in loader:
        loss = engine(coords.cuda().half()).mean()
        engine.backward(loss)
        engine.step()

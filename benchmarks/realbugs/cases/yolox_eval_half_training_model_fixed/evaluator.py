import torch


class COCOEvaluator:
    def __init__(self, loader=()):
        self.loader = loader

    @torch.no_grad()
    def evaluate(self, model, half=False):
        tensor_type = torch.cuda.HalfTensor if half else torch.cuda.FloatTensor
        model = model.eval()
        if half:
            model = model.half()
        outputs = []
        for imgs in self.loader:
            outputs.append(model(imgs.type(tensor_type)))
        return float(len(outputs))

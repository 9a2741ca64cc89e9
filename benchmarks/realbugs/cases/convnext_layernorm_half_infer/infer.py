import torch

from convnext import Stage


def load(path):
    model = torch.nn.Sequential(Stage(96), Stage(96))
    model.load_state_dict(torch.load(path, map_location="cpu"))
    return model.cuda().eval().half()


@torch.no_grad()
def predict(model, images):
    return model(images.cuda().half())


if __name__ == "__main__":
    net = load("convnext_tiny.pth")
    print(predict(net, torch.rand(1, 96, 56, 56)).float().mean())

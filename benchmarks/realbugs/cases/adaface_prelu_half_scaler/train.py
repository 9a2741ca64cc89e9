import torch

from net import BasicBlockIR


def train(loader, epochs=1):
    model = torch.nn.Sequential(BasicBlockIR(64, 64), BasicBlockIR(64, 64)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.cuda.amp.GradScaler()
    for _ in range(epochs):
        for x, y in loader:
            with torch.cuda.amp.autocast():
                loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)  # realbug: f1 @end
            scaler.update()

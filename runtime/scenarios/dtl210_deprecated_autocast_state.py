"""A fused linear autograd function that casts its inputs to the autocast dtype by hand.

Defect (DTL210): `torch.get_autocast_gpu_dtype()` is deprecated since torch 2.4 ("Please use
torch.get_autocast_dtype('cuda') instead"), and the warning comes on every forward.
"""

import torch
import torch.nn as nn


class FusedLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        dtype = torch.get_autocast_gpu_dtype()  # defect: DTL210
        if torch.is_autocast_enabled():
            x, weight = x.to(dtype), weight.to(dtype)
        ctx.save_for_backward(x, weight)
        return x @ weight.t()

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        return grad @ weight, grad.t() @ x


def main():
    torch.manual_seed(0)
    weight = nn.Parameter(torch.randn(4, 8).cuda())
    optimizer = torch.optim.SGD([weight], lr=0.05)
    for step in range(5):
        x = torch.randn(16, 8).cuda()
        loss = FusedLinear.apply(x, weight).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())


if __name__ == "__main__":
    main()

# realbugs-case: bug | family: 7 | shape: - | twin: -
# source: https://github.com/Lightning-AI/litgpt/issues/205
# report: precision defaults to "bf16-mixed" on a 16 GB T4, which has no bf16 support
import lightning as L
import torch


def setup(precision=None, devices=1, tpu=False):
    if precision is None:
        precision = "32-true" if tpu else "bf16-mixed"  # realbug: @end
    fabric = L.Fabric(devices=devices, precision=precision)  # realbug: f7 @end
    fabric.launch()
    model = torch.nn.Linear(16, 16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    model, optimizer = fabric.setup(model, optimizer)
    return fabric, model, optimizer

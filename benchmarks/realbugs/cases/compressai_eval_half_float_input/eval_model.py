# realbugs-case: bug | family: 1 | shape: - | twin: -
# source: https://github.com/InterDigitalInc/CompressAI/issues/73
# report: eval_model --half: input type (torch.cuda.FloatTensor) and weight type (torch.cuda.HalfTensor) should be the same
import argparse

import torch

from codec import load_checkpoint


@torch.no_grad()
def inference(model, x):
    x = x.unsqueeze(0)
    out_enc = model.compress(x)  # realbug: f1 @end
    return model.decompress(out_enc["strings"], out_enc["shape"])


def eval_model(model, filepaths, half=False):
    device = next(model.parameters()).device
    if half:
        model = model.half()  # realbug: @end
    for f in filepaths:
        x = torch.load(f).to(device)
        inference(model, x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("--half", action="store_true")
    args = parser.parse_args()
    model = load_checkpoint(args.checkpoint).cuda().eval()
    eval_model(model, [], half=args.half)

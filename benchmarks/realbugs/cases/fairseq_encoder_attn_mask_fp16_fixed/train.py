import argparse

import torch

from transformer_layer import EncoderLayer


def build_model(args):
    layer = EncoderLayer(args.dim, args.heads)
    if args.fp16:
        layer = layer.half()
    return layer.cuda()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--fp16", action="store_true")
    args = parser.parse_args()
    model = build_model(args)
    dtype = torch.float16 if args.fp16 else torch.float32
    x = torch.randn(10, 4, args.dim, device="cuda", dtype=dtype)
    pad = torch.zeros(4, 10, dtype=torch.bool, device="cuda")
    attn_mask = torch.triu(torch.ones(10, 10, device="cuda", dtype=dtype), 1)
    print(model(x, pad, attn_mask).shape)


if __name__ == "__main__":
    main()

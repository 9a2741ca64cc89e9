# realbugs-case: bug | family: 7 | shape: - | twin: -
# source: https://github.com/Vchitect/Latte/issues/61
# report: "WARNING: using half percision for inferencing!" then "slow_conv2d_cpu" not implemented for 'Half' on a machine running on the CPU
import torch
from omegaconf import OmegaConf


def main(args):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    latte = args.model.to(device)
    vae = args.vae.to(device)
    if args.use_fp16:
        print("WARNING: using half percision for inferencing!")
        vae.to(dtype=torch.float16)  # realbug: f7 @end
        latte.to(dtype=torch.float16)  # realbug: @end
    z = torch.randn(1, 4, 16, 32, 32, device=device, dtype=torch.float16 if args.use_fp16 else torch.float32)
    samples = latte(z, torch.zeros(1, device=device))  # realbug: @end
    return vae.decode(samples / 0.18215).sample


if __name__ == "__main__":
    main(OmegaConf.load("configs/ffs_sample.yaml"))

# realbugs-case: twin | family: 2 | shape: 5 | twin_of: sdxl_lora_vae_fp32_pixels_half
# source: https://github.com/huggingface/diffusers/pull/6231
import torch
from accelerate import Accelerator
from diffusers import AutoencoderKL


def main(args):
    accelerator = Accelerator(mixed_precision=args.mixed_precision)
    weight_dtype = torch.float32
    if accelerator.mixed_precision == "fp16":
        weight_dtype = torch.float16
    elif accelerator.mixed_precision == "bf16":
        weight_dtype = torch.bfloat16
    vae = AutoencoderKL.from_pretrained(args.pretrained_model_name_or_path, subfolder="vae")
    vae.requires_grad_(False)
    if args.pretrained_vae_model_name_or_path is None:
        vae.to(accelerator.device, dtype=torch.float32)
    else:
        vae.to(accelerator.device, dtype=weight_dtype)
    for batch in args.train_dataloader:
        pixel_values = batch["pixel_values"].to(dtype=vae.dtype)
        model_input = vae.encode(pixel_values).latent_dist.sample()
        print(model_input.shape)

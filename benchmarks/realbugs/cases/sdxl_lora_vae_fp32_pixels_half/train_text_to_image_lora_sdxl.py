# realbugs-case: bug | family: 2 | shape: 5 | twin: sdxl_lora_vae_fp32_pixels_half_fixed
# source: https://github.com/huggingface/diffusers/issues/4619
# report: --mixed_precision=fp16: VAE kept in float32 but pixel_values cast to weight_dtype -> Input type (c10::Half) and bias type (float) should be the same
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
        pixel_values = batch["pixel_values"].to(dtype=weight_dtype)  # realbug: @end
        model_input = vae.encode(pixel_values).latent_dist.sample()  # realbug: f2 s5 @end
        print(model_input.shape)

# realbugs-case: bug | family: 2 | shape: 5 | twin: dreambooth_unet_fp16_accelerate_fixed
# source: https://github.com/ShivamShrirao/diffusers/issues/131
# report: accelerate --mixed_precision=fp16 with the UNet loaded in fp16 -> ValueError: Attempting to unscale FP16 gradients.
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from diffusers import DDPMScheduler, UNet2DConditionModel

from args import parse_args


def main(args):
    accelerator = Accelerator(mixed_precision=args.mixed_precision)
    weight_dtype = torch.float16 if args.mixed_precision == "fp16" else torch.float32
    unet = UNet2DConditionModel.from_pretrained(
        args.pretrained_model_name_or_path, subfolder="unet", torch_dtype=weight_dtype  # realbug: f2 s5 @end
    )
    optimizer = torch.optim.AdamW(unet.parameters(), lr=args.learning_rate)
    scheduler = DDPMScheduler.from_pretrained(args.pretrained_model_name_or_path, subfolder="scheduler")
    unet, optimizer = accelerator.prepare(unet, optimizer)
    for latents, encoder_hidden_states in args.batches:
        noise = torch.randn_like(latents)
        t = torch.randint(0, 1000, (latents.shape[0],), device=latents.device)
        pred = unet(scheduler.add_noise(latents, noise, t), t, encoder_hidden_states).sample
        loss = F.mse_loss(pred.float(), noise.float())
        accelerator.backward(loss)
        optimizer.step()  # realbug: @end
        optimizer.zero_grad()


if __name__ == "__main__":
    main(parse_args())

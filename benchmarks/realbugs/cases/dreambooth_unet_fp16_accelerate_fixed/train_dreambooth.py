# realbugs-case: twin | family: 2 | shape: 5 | twin_of: dreambooth_unet_fp16_accelerate
# source: https://github.com/huggingface/diffusers/pull/1916
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from diffusers import DDPMScheduler, UNet2DConditionModel

from args import parse_args


def main(args):
    accelerator = Accelerator(mixed_precision=args.mixed_precision)
    unet = UNet2DConditionModel.from_pretrained(args.pretrained_model_name_or_path, subfolder="unet")
    if unet.dtype != torch.float32:
        raise ValueError(f"UNet loaded as datatype {unet.dtype}; trainable weights must be float32")
    optimizer = torch.optim.AdamW(unet.parameters(), lr=args.learning_rate)
    scheduler = DDPMScheduler.from_pretrained(args.pretrained_model_name_or_path, subfolder="scheduler")
    unet, optimizer = accelerator.prepare(unet, optimizer)
    for latents, encoder_hidden_states in args.batches:
        noise = torch.randn_like(latents)
        t = torch.randint(0, 1000, (latents.shape[0],), device=latents.device)
        pred = unet(scheduler.add_noise(latents, noise, t), t, encoder_hidden_states).sample
        loss = F.mse_loss(pred.float(), noise.float())
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main(parse_args())

# realbugs-case: trap | family: 2 | shape: 5
# source: https://github.com/huggingface/diffusers/pull/1916
# looks like: models cast to weight_dtype in an fp16 run; only the frozen VAE and text encoder are cast, the trained UNet stays float32
import torch
import torch.nn.functional as F
from accelerate import Accelerator


def train(args, unet, vae, text_encoder, loader, noise_scheduler):
    accelerator = Accelerator(mixed_precision=args.mixed_precision)
    weight_dtype = torch.float32
    if accelerator.mixed_precision == "fp16":
        weight_dtype = torch.float16
    vae.requires_grad_(False)
    text_encoder.requires_grad_(False)
    vae.to(accelerator.device, dtype=weight_dtype)
    text_encoder.to(accelerator.device, dtype=weight_dtype)
    optimizer = torch.optim.AdamW(unet.parameters(), lr=args.learning_rate)
    unet, optimizer, loader = accelerator.prepare(unet, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(unet):
            latents = vae.encode(batch["pixel_values"].to(weight_dtype)).latent_dist.sample() * 0.18215
            noise = torch.randn_like(latents)
            t = torch.randint(0, 1000, (latents.shape[0],), device=latents.device)
            noisy = noise_scheduler.add_noise(latents, noise, t)
            encoder_hidden_states = text_encoder(batch["input_ids"])[0]
            pred = unet(noisy, t, encoder_hidden_states).sample
            loss = F.mse_loss(pred.float(), noise.float())
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(unet.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()

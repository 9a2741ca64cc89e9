# realbugs-case: bug | family: 1 | shape: 5 | twin: -
# source: https://github.com/huggingface/diffusers/issues/4619
# report: latents cached in float32 by one function are fed to a UNet cast to weight_dtype by another: Input type (float) and bias type (c10::Half)
import torch


def cache_latents(vae, images):
    with torch.no_grad():
        return [vae.encode(img.float()).latent_dist.sample() * 0.13025 for img in images]


def train(unet, vae, images, weight_dtype=torch.float16):
    latents_cache = cache_latents(vae.float(), images)
    unet.to(dtype=weight_dtype)  # realbug: @c
    for latents in latents_cache:
        t = torch.randint(0, 1000, (latents.shape[0],), device=latents.device)
        noise_pred = unet(latents, t).sample  # realbug: f1 s5 @c
        noise_pred.float().pow(2).mean().backward()

import torch


def log_validation(pipeline, args, accelerator):
    # keep the trained transformer's dtype: only move the pipeline
    pipeline = pipeline.to(accelerator.device)
    generator = torch.Generator(device=accelerator.device).manual_seed(args.seed)
    autocast_ctx = torch.autocast(accelerator.device.type)
    with autocast_ctx:
        images = [pipeline(args.validation_prompt, generator=generator).images[0] for _ in range(2)]
    return images

import torch


def log_validation(pipeline, args, accelerator, torch_dtype):
    pipeline = pipeline.to(accelerator.device, dtype=torch_dtype)  # realbug: f5 s5 @end
    generator = torch.Generator(device=accelerator.device).manual_seed(args.seed)
    images = [pipeline(args.validation_prompt, generator=generator).images[0] for _ in range(2)]
    return images

# realbugs-case: twin | family: 5 | shape: 5 | twin_of: sdxl_lora_validation_text_encoder_recast
# source: https://github.com/huggingface/diffusers/pull/6231
import torch
from accelerate import Accelerator
from diffusers import StableDiffusionXLPipeline


def main(args, unet, text_encoder_one, text_encoder_two, vae, loader):
    accelerator = Accelerator(mixed_precision=args.mixed_precision)
    weight_dtype = torch.float16 if accelerator.mixed_precision == "fp16" else torch.float32
    params = [p for m in (unet, text_encoder_one, text_encoder_two) for p in m.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.learning_rate)
    unet, text_encoder_one, text_encoder_two, optimizer = accelerator.prepare(
        unet, text_encoder_one, text_encoder_two, optimizer
    )
    for epoch in range(args.num_train_epochs):
        for batch in loader:
            loss = unet(**batch).sample.float().pow(2).mean()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        pipeline = StableDiffusionXLPipeline.from_pretrained(
            args.pretrained_model_name_or_path,
            vae=vae,
            text_encoder=accelerator.unwrap_model(text_encoder_one),
            text_encoder_2=accelerator.unwrap_model(text_encoder_two),
            unet=accelerator.unwrap_model(unet),
        )
        with torch.autocast(accelerator.device.type):
            pipeline(args.validation_prompt, num_inference_steps=25)

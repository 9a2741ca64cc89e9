# realbugs-case: bug | family: 5 | shape: 5 | twin: sdxl_lora_validation_text_encoder_recast_fixed
# source: https://github.com/huggingface/diffusers/pull/6231
# report: --train_text_encoder with fp16: the validation pipeline built with torch_dtype=weight_dtype from the trained text encoders casts their fp32 LoRA params to fp16 -> Attempting to unscale FP16 gradients (diffusers#6086)
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
            optimizer.step()  # realbug: @v
            optimizer.zero_grad()
        pipeline = StableDiffusionXLPipeline.from_pretrained(
            args.pretrained_model_name_or_path,
            vae=vae,
            text_encoder=accelerator.unwrap_model(text_encoder_one),
            text_encoder_2=accelerator.unwrap_model(text_encoder_two),
            unet=accelerator.unwrap_model(unet),
            torch_dtype=weight_dtype,  # realbug: f5 s5 @v
        )
        pipeline(args.validation_prompt, num_inference_steps=25)

# realbugs-case: twin | family: 5 | shape: 5 | twin_of: flux_lora_log_validation_recast
# source: https://github.com/huggingface/diffusers/pull/9565
import torch
from accelerate import Accelerator
from diffusers import FluxPipeline, FluxTransformer2DModel
from peft import LoraConfig

from validation import log_validation


def main(args):
    accelerator = Accelerator(mixed_precision=args.mixed_precision)
    weight_dtype = torch.float16 if accelerator.mixed_precision == "fp16" else torch.bfloat16
    transformer = FluxTransformer2DModel.from_pretrained(args.model, subfolder="transformer")
    transformer.requires_grad_(False)
    transformer.to(accelerator.device, dtype=weight_dtype)
    transformer.add_adapter(LoraConfig(r=4, target_modules=["to_k", "to_q", "to_v"]))
    for p in transformer.parameters():
        if p.requires_grad:
            p.data = p.to(torch.float32)
    params = [p for p in transformer.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.learning_rate)
    transformer, optimizer = accelerator.prepare(transformer, optimizer)
    for step, batch in enumerate(args.dataloader):
        loss = transformer(**batch).sample.float().pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        if step % args.validation_steps == 0:
            pipeline = FluxPipeline.from_pretrained(
                args.model, transformer=accelerator.unwrap_model(transformer), torch_dtype=weight_dtype
            )
            log_validation(pipeline, args, accelerator)

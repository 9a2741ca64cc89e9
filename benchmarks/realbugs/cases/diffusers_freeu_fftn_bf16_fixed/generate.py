import torch
from diffusers import StableDiffusionXLPipeline

dtype = torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float16
pipe = StableDiffusionXLPipeline.from_pretrained("stabilityai/stable-diffusion-xl-base-1.0", torch_dtype=dtype).to("cuda")
pipe.enable_freeu(s1=0.9, s2=0.2, b1=1.3, b2=1.4)
image = pipe("a photo of a cat", height=1024, width=1024).images[0]

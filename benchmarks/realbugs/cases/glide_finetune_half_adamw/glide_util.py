# realbugs-case: bug | family: 1 | shape: - | twin: -
# source: https://github.com/afiaka87/glide-finetune/issues/5
# report: fine-tuning GLIDE in half precision: NaN after the first iteration, AdamW's default eps underflows in fp16
import torch


def load_model(glide_path="", use_fp16=False, model_type="base"):
    from glide_text2im.model_creation import create_model_and_diffusion, model_and_diffusion_defaults

    options = model_and_diffusion_defaults()
    options["use_fp16"] = use_fp16
    model, diffusion = create_model_and_diffusion(**options)
    if glide_path:
        model.load_state_dict(torch.load(glide_path, map_location="cpu"))
    if use_fp16:
        model.convert_to_fp16()
        model = model.half()  # realbug: @end
    return model, diffusion, options

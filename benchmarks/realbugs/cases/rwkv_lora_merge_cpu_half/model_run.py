# realbugs-case: bug | family: 4,7 | shape: - | twin: rwkv_lora_merge_cpu_half_fixed
# source: https://github.com/Blealtan/RWKV-LM-LoRA/issues/16
# report: merging fp16 LoRA weights on the CPU: w[k] += w[lora_B] @ w[lora_A] -> "addmm_impl_cpu_" not implemented for 'Half'
import torch


def load_weights(args):
    w = torch.load(args.MODEL_NAME + ".pth", map_location="cpu")
    w_lora = torch.load(args.lora_load + ".pth", map_location="cpu")
    for k in w_lora.keys():
        w[k] = w_lora[k]
    for k in list(w.keys()):
        if k.endswith(".weight") and k[: -len(".weight")] + ".lora_A" in w:
            prefix = k[: -len(".weight")]
            lora_A, lora_B = prefix + ".lora_A", prefix + ".lora_B"
            w[k] += w[lora_B] @ w[lora_A] * (args.lora_alpha / args.lora_r)  # realbug: f4 f7
            del w[lora_A]
            del w[lora_B]
    return w

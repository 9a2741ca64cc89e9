# realbugs-case: twin | family: 4,7 | shape: - | twin_of: rwkv_lora_merge_cpu_half
# source: https://github.com/Blealtan/RWKV-LM-LoRA/issues/16
import torch


def load_weights(args):
    w = torch.load(args.MODEL_NAME + ".pth", map_location="cpu")
    w_lora = torch.load(args.lora_load + ".pth", map_location="cpu")
    for k in w_lora.keys():
        w[k] = w_lora[k].float() if args.RUN_DEVICE == "cpu" else w_lora[k]
    for k in list(w.keys()):
        if k.endswith(".weight") and k[: -len(".weight")] + ".lora_A" in w:
            prefix = k[: -len(".weight")]
            lora_A, lora_B = prefix + ".lora_A", prefix + ".lora_B"
            if args.RUN_DEVICE == "cpu":
                w[k], w[lora_A], w[lora_B] = w[k].float(), w[lora_A].float(), w[lora_B].float()
            w[k] += w[lora_B] @ w[lora_A] * (args.lora_alpha / args.lora_r)
            del w[lora_A]
            del w[lora_B]
    return w

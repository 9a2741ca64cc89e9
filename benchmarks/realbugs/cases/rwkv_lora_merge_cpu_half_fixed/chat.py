import types

from model_run import load_weights

args = types.SimpleNamespace(
    RUN_DEVICE="cpu", FLOAT_MODE="fp32", MODEL_NAME="RWKV-4-Pile-169M", lora_load="rwkv-lora-0",
    lora_alpha=16, lora_r=8,
)
weights = load_weights(args)
print(len(weights))

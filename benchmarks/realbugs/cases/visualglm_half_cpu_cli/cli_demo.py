# realbugs-case: bug | family: 7 | shape: - | twin: -
# source: https://github.com/zai-org/VisualGLM-6B/issues/30
# report: model.half() run without a GPU: "addmm_impl_cpu_" / "slow_conv2d_cpu" not implemented for 'Half'
import argparse

import torch
from transformers import AutoModel, AutoTokenizer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quant", choices=[8, 4], type=int, default=None)
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained("THUDM/visualglm-6b", trust_remote_code=True)
    model = AutoModel.from_pretrained("THUDM/visualglm-6b", trust_remote_code=True).half()  # realbug: f7 @end
    if args.quant:
        model = model.quantize(args.quant)
    model = model.eval()
    response, history = model.chat(tokenizer, "demo.jpg", "Describe this image", history=[])  # realbug: @end
    print(response)


if __name__ == "__main__":
    main()

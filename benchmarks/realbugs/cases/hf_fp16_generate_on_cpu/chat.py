# realbugs-case: bug | family: 7 | shape: - | twin: hf_fp16_generate_on_cpu_fixed
# source: https://github.com/huggingface/transformers/issues/27769
# report: torch_dtype=torch.float16 with no GPU -> RuntimeError: "addmm_impl_cpu_" not implemented for 'Half'
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

model_id = "mistralai/Mistral-7B-Instruct-v0.1"
device = "cuda" if torch.cuda.is_available() else "cpu"
tokenizer = AutoTokenizer.from_pretrained(model_id)
model = AutoModelForCausalLM.from_pretrained(model_id, torch_dtype=torch.float16)  # realbug: f7 @end
model.to(device)

inputs = tokenizer("Tell me a joke", return_tensors="pt").to(device)
print(tokenizer.decode(model.generate(**inputs, max_new_tokens=20)[0]))  # realbug: @end

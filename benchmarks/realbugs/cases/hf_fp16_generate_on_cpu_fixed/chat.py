# realbugs-case: twin | family: 7 | shape: - | twin_of: hf_fp16_generate_on_cpu
# source: https://github.com/huggingface/transformers/issues/27769
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

model_id = "mistralai/Mistral-7B-Instruct-v0.1"
device = "cuda" if torch.cuda.is_available() else "cpu"
dtype = torch.float16 if device == "cuda" else torch.float32
tokenizer = AutoTokenizer.from_pretrained(model_id)
model = AutoModelForCausalLM.from_pretrained(model_id, torch_dtype=dtype)
model.to(device)

inputs = tokenizer("Tell me a joke", return_tensors="pt").to(device)
print(tokenizer.decode(model.generate(**inputs, max_new_tokens=20)[0]))

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessorList

from generation_utils import StopWordsLogitsProcessor

tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen-7B-Chat", trust_remote_code=True)
model = AutoModelForCausalLM.from_pretrained(
    "Qwen/Qwen-7B-Chat", device_map="auto", trust_remote_code=True, torch_dtype=torch.float16
).eval()

inputs = tokenizer("Hello", return_tensors="pt").to(model.device)
processor = StopWordsLogitsProcessor([[151643]], eos_token_id=151643)
out = model.generate(**inputs, logits_processor=LogitsProcessorList([processor]), max_new_tokens=32)
print(tokenizer.decode(out[0]))

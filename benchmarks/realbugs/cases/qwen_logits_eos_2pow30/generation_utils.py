# realbugs-case: bug | family: 1 | shape: - | twin: qwen_logits_eos_2pow30_fixed
# source: https://github.com/QwenLM/Qwen/issues/32
# report: scores[i, self.eos_token_id] = float(2**30) -> value cannot be converted to type at::Half without overflow
import torch


class StopWordsLogitsProcessor:
    def __init__(self, stop_words_ids, eos_token_id):
        self.stop_words_ids = stop_words_ids
        self.eos_token_id = eos_token_id

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        for i, row in enumerate(input_ids.tolist()):
            if any(row[-len(stop):] == stop for stop in self.stop_words_ids):
                scores[i, self.eos_token_id] = float(2**30)  # realbug: f1
        return scores

# realbugs-case: twin | family: 1 | shape: - | twin_of: qwen_logits_eos_2pow30
# source: https://github.com/QwenLM/Qwen/issues/32
import torch


class StopWordsLogitsProcessor:
    def __init__(self, stop_words_ids, eos_token_id):
        self.stop_words_ids = stop_words_ids
        self.eos_token_id = eos_token_id

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        for i, row in enumerate(input_ids.tolist()):
            if any(row[-len(stop):] == stop for stop in self.stop_words_ids):
                scores[i, self.eos_token_id] = torch.finfo(scores.dtype).max
        return scores

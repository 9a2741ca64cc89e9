# realbugs-case: bug | family: 3 | shape: 6 | twin: -
# source: https://github.com/jadore801120/attention-is-all-you-need-pytorch/pull/48
# report: on Windows NumPy's default integer is int32; the decoded positions become an IntTensor and the embedding lookup fails (expected Long)
import numpy as np
import torch
import torch.nn as nn


class Translator:
    def __init__(self, vocab=1000, dim=64, max_len=100):
        self.tgt_word_emb = nn.Embedding(vocab, dim)
        self.position_enc = nn.Embedding(max_len, dim)

    def decode_step(self, dec_partial_seq, len_dec_seq):
        dec_partial_pos = torch.from_numpy(np.array([range(1, len_dec_seq + 1)]))
        dec_partial_pos = dec_partial_pos.repeat(dec_partial_seq.size(0), 1)
        return self.tgt_word_emb(dec_partial_seq) + self.position_enc(dec_partial_pos)  # realbug: s6

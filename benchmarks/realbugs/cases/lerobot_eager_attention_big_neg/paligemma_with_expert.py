# realbugs-case: bug | family: 6 | shape: - | twin: -
# source: https://github.com/huggingface/lerobot/pull/710
# report: torch.where(mask, att_weights, big_neg) with big_neg=-2.3819763e38 under AMP -> cannot be converted to Half
import torch
import torch.nn.functional as F


def eager_attention_forward(attention_mask, query_states, key_states, value_states, head_dim):
    att_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * head_dim**-0.5
    big_neg = -2.3819763e38
    masked_att_weights = torch.where(attention_mask[:, None, :, :], att_weights, big_neg)  # realbug: f6
    probs = F.softmax(masked_att_weights, dim=-1)
    return torch.matmul(probs, value_states)

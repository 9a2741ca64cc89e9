"""Issue 14: false-positive causes seen on code outside the development corpus, as sketches."""

from __future__ import annotations

from dtype_lint.config import Settings
from dtype_lint.engine import check_text
from dtype_lint.findings import Confidence

# Cause 1: the scaler is built only for the flag value that also picks float16 (Lightning's
# precision plugins). Not relating the two conditions, DTL301 may only guess: low, hidden.
CORRELATED_FLAG = '''import torch


class Precision:
    def __init__(self, precision):
        scaler = None
        if precision == "16-mixed":
            scaler = torch.amp.GradScaler("cuda")
        self.scaler = scaler
        self.dtype = torch.bfloat16 if precision == "bf16-mixed" else torch.float16

    def forward_context(self):
        return torch.autocast("cuda", dtype=self.dtype)
'''

# The same dtype choice with an unconditional scaler: a reachable configuration, still shown.
UNCONDITIONAL_SCALER = CORRELATED_FLAG.replace(
    '        scaler = None\n        if precision == "16-mixed":\n            scaler = torch.amp.GradScaler("cuda")\n',
    '        scaler = torch.amp.GradScaler("cuda")\n',
)


def _findings(text: str, code: str, level: Confidence = Confidence.LOW):
    settings = Settings(select=(code,), min_confidence=level)
    return [(f.code, f.line, f.confidence) for f in check_text(text, "plugin.py", settings).findings]


def test_scaler_built_under_the_dtype_flag_is_low_confidence():
    assert _findings(CORRELATED_FLAG, "DTL301") == [("DTL301", 8, Confidence.LOW)]
    assert _findings(CORRELATED_FLAG, "DTL301", Confidence.MEDIUM) == []


def test_unconditional_scaler_with_a_maybe_bf16_autocast_stays_medium():
    assert UNCONDITIONAL_SCALER != CORRELATED_FLAG
    assert _findings(UNCONDITIONAL_SCALER, "DTL301") == [("DTL301", 6, Confidence.MEDIUM)]


# Cause 4: old-torch fallbacks are the compatible idiom, not deprecated use.
FALLBACKS = '''import torch

scaler = torch.amp.GradScaler("cuda") if _TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()
try:
    scaler = torch.amp.GradScaler(device="cuda")
except (AttributeError, TypeError):
    scaler = torch.cuda.amp.GradScaler()
if digit_version(TORCH_VERSION) < digit_version("1.10.0"):
    context = torch.cuda.amp.autocast(enabled=True)
else:
    context = torch.cuda.amp.autocast(enabled=True)
'''


def test_old_torch_fallbacks_are_not_deprecated_use():
    # Only the last one, on the new-torch side of the version test, is reported.
    assert _findings(FALLBACKS, "DTL201") == [("DTL201", 11, Confidence.HIGH)]


# Cause 7: a hard-coded bf16 load is a deliberate choice far more often than an oversight (torchao's
# scripts, lerobot's VLM): low. A bf16 trainer without a check stays at the default level.
BF16_LOAD = 'import torch\nfrom transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained("x", dtype=torch.bfloat16, device_map="cuda")\n'
BF16_TRAINER = 'from transformers import TrainingArguments\nargs = TrainingArguments("out", bf16=True)\n'


def test_bf16_load_without_check_is_low_but_bf16_training_is_not():
    assert _findings(BF16_LOAD, "DTL203") == [("DTL203", 3, Confidence.LOW)]
    assert _findings(BF16_TRAINER, "DTL203") == [("DTL203", 2, Confidence.MEDIUM)]

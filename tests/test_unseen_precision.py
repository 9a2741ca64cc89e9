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


def _findings(text: str, code: str, level: Confidence = Confidence.LOW, **targets: str):
    settings = Settings(select=(code,), min_confidence=level, **targets)
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
# scripts, lerobot's VLM): not reported (it was low; issue 21 item 6). A bf16 trainer without a
# check stays at the default level.
BF16_LOAD = 'import torch\nfrom transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained("x", dtype=torch.bfloat16, device_map="cuda")\n'
BF16_TRAINER = 'from transformers import TrainingArguments\nargs = TrainingArguments("out", bf16=True)\n'


def test_bf16_load_without_check_is_silent_but_bf16_training_is_not():
    # DTL203 speaks only to projects that support torch < 2.3 (issue 21).
    assert _findings(BF16_LOAD, "DTL203", target_torch="2.1") == []
    assert _findings(BF16_TRAINER, "DTL203", target_torch="2.1") == [("DTL203", 2, Confidence.MEDIUM)]


def _at(text: str, path: str = "plugin.py", level: Confidence = Confidence.LOW, **targets: str):
    """Every finding of every rule, at ``level`` and above: (code, line, confidence)."""
    settings = Settings(min_confidence=level, **targets)
    return sorted((f.code, f.line, f.confidence) for f in check_text(text, path, settings).findings)


# Cause 2: casts the flow did not model. A bf16 tensor reinterpreted as int16 before `.numpy()` is
# the right export; `.to(int)` is int64; `model.half().float()` leaves the model in float32.
CASTS = '''import torch

emb = torch.nn.Embedding(10, 4)


def export(weight):
    bits = weight.to(torch.bfloat16).view(torch.int16)
    return bits.numpy()


def lookup(scores):
    idx = scores.half().to(int)
    return emb(idx)


model = torch.nn.Linear(4, 4)
model.half().float()
out = model(torch.randn(2, 4))
'''


def test_reinterpreting_views_python_types_and_chained_casts_are_modelled():
    assert _at(CASTS) == []
    # The same lines without the casts are each reported.
    broken = CASTS.replace(".view(torch.int16)", "").replace(".to(int)", "").replace("model.half().float()", "model.half()")
    assert {code for code, _, _ in _at(broken)} >= {"DTL604", "DTL106", "DTL101"}


# Cause 2: a destination whose "float32 or float64" was joined from a helper's return over all of
# its callers is a guess about this call (kornia's polynomial solver): low, not medium.
HELPER_JOIN = '''import torch


def solve(coeffs):
    if coeffs.dtype == torch.float16:
        return solve(coeffs.float()).to(coeffs.dtype)
    return coeffs * 2


def refine(coeffs, lower):
    work = coeffs.double()
    roots = solve(work)
    roots[lower] = torch.zeros(3, dtype=torch.float64)
    return roots


half_roots = solve(torch.zeros(3, dtype=torch.float16))
roots = refine(torch.zeros(3), torch.zeros(3) > 0)


def local(flag):
    roots = torch.zeros(3) if flag else torch.zeros(3, dtype=torch.float64)
    lower = roots > 0
    roots[lower] = torch.zeros(3, dtype=torch.float64)
    return roots
'''


def test_dtype_joined_from_another_functions_return_is_low():
    # Line 13: on refine()'s path `roots` is float64 (solve keeps its argument's dtype), which the
    # flow now follows; it once joined solve's two call sites into a low "float32 or float64".
    assert [f for f in _at(HELPER_JOIN) if f[0] == "DTL104"] == [
        ("DTL104", 24, Confidence.MEDIUM),  # the join is this function's own
    ]


# Cause 3: safe contexts.
AUTOCAST_METHOD = '''import torch
from torch import nn


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 4).half()

    def _autocast_ctx(self):
        return torch.autocast("cuda", dtype=torch.float16)

    def step(self, x):
        with self._autocast_ctx():
            return self.model(x.float())
'''

LOSS_UPCAST = '''import torch
import torch.nn.functional as F


def loss_fn(logits, labels):
    return F.cross_entropy(logits.float(), labels)


def train(model, x, y, scaler):
    with torch.autocast("cuda", dtype=torch.float16):
        logits = model(x)
    loss = loss_fn(logits, y)
    scaler.scale(loss).backward()
'''

RUN_IF = '''import torch
from helpers import RunIf


@RunIf(bf16_cuda=True)
def check_bf16_matmul():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return torch.randn(2, 2, device="cuda") @ torch.randn(2, 2, device="cuda")
'''


def test_autocast_from_a_method_loss_upcast_in_the_loss_function_and_capability_decorator():
    assert _at(AUTOCAST_METHOD) == []
    assert [f[0] for f in _at(AUTOCAST_METHOD.replace("with self._autocast_ctx():", "if x is not None:"))] == ["DTL101"]
    assert [f for f in _at(LOSS_UPCAST) if f[0] == "DTL205"] == []
    assert [f for f in _at(LOSS_UPCAST.replace("logits.float()", "logits")) if f[0] == "DTL205"] == [
        ("DTL205", 12, Confidence.MEDIUM)
    ]
    assert _at(RUN_IF, target_torch="2.1") == []
    assert _at(RUN_IF.replace("@RunIf(bf16_cuda=True)", "@RunIf(min_cuda_gpus=1)"), target_torch="2.1") == [
        ("DTL203", 7, Confidence.MEDIUM)
    ]


MASKS = '''import torch


def windowed(T, dtype, window):
    causal = torch.full((T, T), torch.finfo(dtype).min).triu(1)
    local = torch.full((T, T), torch.finfo(dtype).min).tril(-window)
    return causal + local


def causal_padded(attention_mask, T, dtype):
    causal = torch.full((T, T), torch.finfo(dtype).min).triu(1)
    padding = (1.0 - attention_mask[:, None, None, :]) * torch.finfo(dtype).min
    return causal + padding


def padded(attention_mask, encoder_mask, dtype):
    padding = (1.0 - attention_mask[:, None, None, :]) * torch.finfo(dtype).min
    cross = (1.0 - encoder_mask[:, None, None, :]) * torch.finfo(dtype).min
    return padding + cross
'''
CLAMPED = MASKS + '''

def attend(scores, attention_mask, encoder_mask):
    scores = scores + padded(attention_mask, encoder_mask, scores.dtype)
    scores = torch.max(scores, torch.tensor(torch.finfo(scores.dtype).min))
    return scores.softmax(-1)
'''


def test_masks_that_keep_the_diagonal_and_a_clamp_back_to_finfo_min():
    # A NaN row needs every entry -inf. Two masks that never mask a query's own position cannot
    # make one; nor can a causal triu(1) beside a finite-fill padding mask (the diagonal holds one
    # finfo.min at most: lerobot's molmoact2, issue 21); two padding masks can.
    assert _at(MASKS) == [("DTL502", 19, Confidence.MEDIUM)]
    # The file clamps the scores back to finfo.min after adding the mask: a heuristic risk only
    # (low confidence, not reported: issue 21 item 6).
    assert _at(CLAMPED) == []


# Cause 5: value ranges.
RANGES = '''import torch


def alibi(num_heads):
    return torch.pow(2.0, -torch.arange(1, num_heads + 1, dtype=torch.float16))


def positions(n):
    assert n <= 2048
    return torch.arange(n, dtype=torch.float16)


def probabilities(per_token_logps):
    return per_token_logps.half().exp()


def unbounded(n, logits):
    return torch.arange(n, dtype=torch.float16), logits.half().exp()
'''


def test_small_counts_asserted_lengths_and_exp_of_log_probabilities():
    assert _at(RANGES) == [
        ("DTL503", 18, Confidence.MEDIUM),
        ("DTL506", 18, Confidence.MEDIUM),
    ]
    assert ("DTL506", 10, Confidence.MEDIUM) in _at(RANGES.replace("    assert n <= 2048\n", "    assert n <= 65536\n"))


# Cause 6: tests that exercise the pattern on purpose.
EXPECTED_FAILURE = '''import pytest
import torch


def test_mismatch_raises():
    model = torch.nn.Linear(2, 2).half()
    x = torch.randn(2, 2)
    with pytest.raises(RuntimeError):
        model(x)


def test_mismatch():
    model = torch.nn.Linear(2, 2).half()
    x = torch.randn(2, 2)
    model(x)
    scaler = torch.cuda.amp.GradScaler()
'''


def test_expected_failures_are_silent_and_test_files_one_level_lower():
    assert _at(EXPECTED_FAILURE, "lib/mismatch.py") == [
        ("DTL101", 15, Confidence.HIGH),
        ("DTL201", 16, Confidence.HIGH),
    ]
    # In a test file the dtype-tracking finding drops a level; an API deprecation does not.
    assert _at(EXPECTED_FAILURE, "tests/test_mismatch.py") == [
        ("DTL101", 15, Confidence.MEDIUM),
        ("DTL201", 16, Confidence.HIGH),
    ]


# Wrong messages.
MESSAGES = '''import torch
import torch.nn.functional as F

model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
mask = (torch.rand(4, 4) > 0.5).byte()
loss = F.binary_cross_entropy_with_logits(torch.randn(4, 4), mask)
for p in model.parameters():
    p.grad = p.grad.to(torch.bfloat16)
'''


def test_messages_name_the_real_dtypes():
    messages = {f.code: f.message for f in check_text(MESSAGES, "m.py", Settings(min_confidence=Confidence.LOW)).findings}
    assert "uint8" in messages["DTL106"] and "int64" not in messages["DTL106"]
    assert "c10::BFloat16" in messages["DTL402"] and "c10::Half" not in messages["DTL402"]


# Misses: RoPE positions in the dtype of a buffer the model cast to bf16; a trainer whose
# precision parameter defaults to bf16 with an always-enabled scaler.
ROPE = '''import torch
from torch import nn


class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)))

    def forward(self, seq_len):
        t = torch.arange(seq_len, dtype=self.inv_freq.dtype)
        return torch.outer(t, self.inv_freq).cos()


rotary = Rotary(64).to(torch.bfloat16)
cos = rotary(8192)
'''

TRAINER = '''import torch


class Trainer:
    def __init__(self, model, precision=torch.bfloat16):
        self.model = model
        self.precision = precision
        self.scaler = torch.amp.GradScaler("cuda")

    def step(self, x):
        with torch.autocast("cuda", dtype=self.precision):
            loss = self.model(x).sum()
        self.scaler.scale(loss).backward()
'''


def test_rope_buffer_cast_with_the_model_and_a_bf16_default_precision_with_a_scaler():
    assert ("DTL506", 11, Confidence.MEDIUM) in _at(ROPE)
    assert _at(ROPE.replace(".to(torch.bfloat16)", "")) == []
    # The default is one configuration a caller may change: medium, not high.
    assert ("DTL301", 8, Confidence.MEDIUM) in _at(TRAINER)


# Misses a general rule catches: the deprecated per-device autocast getters (DTL210), a partial of
# the deprecated autocast (DTL201, also inside an old-torch fallback it is not), and whole-model
# fp16 training behind `--full_fp16` with AdamW's eps=1e-8 (DTL401, DTL404).
MISSES = '''import argparse
from functools import partial
import torch

dtype = torch.get_autocast_gpu_dtype()
autocast = partial(torch.cuda.amp.autocast, dtype=torch.float16)
try:
    custom_fwd = partial(torch.amp.custom_fwd, device_type="cuda")
except AttributeError:
    custom_fwd = partial(torch.cuda.amp.custom_fwd)
parser = argparse.ArgumentParser()
parser.add_argument("--full_fp16", action="store_true")
args = parser.parse_args()
model = torch.nn.Linear(4, 4)
if args.full_fp16:
    model.to(torch.float16)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-8)
for _ in range(10):
    model(torch.randn(2, 4, dtype=torch.float16)).sum().backward()
    opt.step()
'''


def test_misses_from_the_issue_are_caught():
    assert _at(MISSES, level=Confidence.MEDIUM) == [
        ("DTL201", 6, Confidence.HIGH),
        ("DTL210", 5, Confidence.HIGH),
        ("DTL401", 16, Confidence.MEDIUM),
        ("DTL404", 17, Confidence.MEDIUM),
    ]


EARLY_RETURN = '''import torch


def scaler():
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda")
    return torch.cuda.amp.GradScaler()


def newer_side():
    if torch.__version__ < "2.4":
        return torch.cuda.amp.GradScaler()
    return torch.cuda.amp.GradScaler()
'''


def test_code_after_a_new_torch_early_return_is_a_fallback():
    # After `if <new torch>: return`, only an old torch gets there; after `if <old torch>: return`, a new one.
    assert _at(EARLY_RETURN) == [("DTL201", 13, Confidence.HIGH)]


# Cause 8: a test's precision set-up is its subject. fairseq's EMA tests train a `.half()` model
# with SGD and keep a float16 EMA to check the fp16 mode; litgpt's SDPA tests set a float16
# default dtype to check the flash kernel is chosen; diffusers' training tests run an fp16
# autocast step without a scaler. The same lines in a training script are the defects.
HALF_TRAINING_TEST = '''import torch
from copy import deepcopy


class DummyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def forward(self, x):
        return self.layer(x)


def test_ema_fp16():
    model = DummyModule().cuda().half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    ema = deepcopy(model)
    loss = model(torch.randn(32, device="cuda").half()).sum()
    loss.backward()
    optimizer.step()
    for e, p in zip(ema.parameters(), model.parameters()):
        e.data.mul_(0.999).add_(p.data, alpha=0.001)
'''
DEFAULT_DTYPE_TEST = '''import torch


def test_sdpa_choice(config):
    torch.set_default_dtype(torch.float16)
    model = build(config)
    model(torch.randint(0, 10, (2, 16)))
'''
FP16_AUTOCAST_TEST = '''import torch

model = torch.nn.Linear(4, 4).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(torch.randn(2, 4, device="cuda")).sum()
    loss.backward()
    optimizer.step()
'''
# A mismatch in a test is a test that crashes, not a set-up: still reported, one level lower.
MISMATCH_TEST = '''import torch


def test_forward():
    model = torch.nn.Linear(4, 4).half()
    model(torch.randn(2, 4))
'''


def _codes(text: str, path: str) -> list[str]:
    return sorted({code for code, _, _ in _at(text, path, Confidence.MEDIUM)})


def test_a_precision_set_up_in_a_test_file_is_what_the_test_exercises():
    for source, codes in ((HALF_TRAINING_TEST, {"DTL401"}), (DEFAULT_DTYPE_TEST, {"DTL702"}),
                          (FP16_AUTOCAST_TEST, {"DTL208"})):
        assert codes <= set(_codes(source, "train.py")), source  # the defect, in a script
        for path in ("tests/test_ema.py", "test_model.py", "pkg/tests/gpu/test_ema_gpu.py",
                     "tests/models/testing_utils/training.py"):
            assert not codes & set(_codes(source, path)), path


def test_a_mismatch_in_a_test_file_is_still_reported_one_level_lower():
    assert _at(MISMATCH_TEST, "train.py") == [("DTL101", 6, Confidence.HIGH)]
    assert _at(MISMATCH_TEST, "tests/test_linear.py") == [("DTL101", 6, Confidence.MEDIUM)]


# Cause 9: a cast chosen on the parameter's own dtype keeps it (OpenNMT's validation swaps the
# moving average in with `avg.half() if param.dtype == torch.float16 else avg`).
OWN_DTYPE_CAST = '''import torch
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss.backward()
for avg, param in zip(averages, model.parameters()):
    BODY
'''


def test_a_cast_to_the_dtype_the_parameter_is_tested_to_have_keeps_it():
    def found(body):
        return [(c, line) for c, line, _ in _at(OWN_DTYPE_CAST.replace("BODY", body), "train.py", Confidence.MEDIUM)
                if c == "DTL402"]
    assert found("param.data = avg.data.half() if param.dtype == torch.float16 else avg.data") == []
    assert found("param.data = avg.data.bfloat16() if param.dtype is torch.bfloat16 else avg.data") == []
    assert found("if param.dtype == torch.float16:\n        param.data = avg.data.half()") == []
    # twins: the test names another dtype, the cast is in the other branch, or there is no test
    assert found("param.data = avg.data.half() if param.dtype == torch.bfloat16 else avg.data") == [("DTL402", 6)]
    assert found("if param.dtype == torch.float16:\n        pass\n    else:\n        param.data = avg.data.half()") == [
        ("DTL402", 9)]
    assert found("param.data = avg.data.half()") == [("DTL402", 6)]


# Cause 10: under `autocast(enabled=flag)` a tensor the region made is low only on runs where the
# region is on, and there autocast runs its float32-listed ops (softmax, log_softmax) in float32:
# DINO's loss, called inside `torch.cuda.amp.autocast(fp16_scaler is not None)`, sums float32 terms.
DINO_LOSS = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class DINOLoss(nn.Module):
    def forward(self, student_output, teacher_output):
        teacher_out = F.softmax(teacher_output, dim=-1).chunk(2)
        student_out = STUDENT.chunk(4)
        total_loss = 0
        for q in teacher_out:
            for v in range(4):
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                total_loss += loss.mean()
        return total_loss


def train_one_epoch(student, teacher, loader, dino_loss, fp16_scaler):
    for images in loader:
        with torch.cuda.amp.autocast(fp16_scaler is not None):
            loss = dino_loss(student(images), teacher(images))


def main(args):
    student = nn.Sequential(nn.Linear(8, 8)).cuda()
    teacher = nn.Sequential(nn.Linear(8, 8)).cuda()
    fp16_scaler = torch.cuda.amp.GradScaler() if args.use_fp16 else None
    train_one_epoch(student, teacher, loader, DINOLoss().cuda(), fp16_scaler)
'''
# the same loss with softmax terms, under `torch.autocast(..., enabled=args.amp)`
SOFTMAX_LOSS = (
    DINO_LOSS.replace("STUDENT", "student_output")
    .replace("torch.cuda.amp.autocast(fp16_scaler is not None)", 'torch.autocast("cuda", enabled=args.amp)')
    .replace("loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)",
             "loss = (q * F.softmax(student_out[v], dim=-1)).sum(dim=-1)")
)


def test_a_float32_listed_op_under_a_flagged_autocast_is_float32_on_the_runs_its_input_is_low():
    def found(text):
        return [(c, line) for c, line, _ in _at(text, "main_dino.py", Confidence.MEDIUM) if c == "DTL505"]
    assert found(DINO_LOSS.replace("STUDENT", "student_output")) == []
    assert found(SOFTMAX_LOSS) == []
    # twin: tensors cast to float16 by hand stay float16 on the runs where the region is off (both
    # factors: the teacher's float32 softmax would promote the product back to float32)
    both_half = DINO_LOSS.replace("STUDENT", "student_output.half()").replace(
        "F.softmax(teacher_output, dim=-1).chunk(2)", "F.softmax(teacher_output, dim=-1).half().chunk(2)")
    assert found(both_half) == [("DTL505", 14)]
    # iterating the teacher's chunks gives float32 tensors: a float32 factor keeps the loss float32
    assert found(DINO_LOSS.replace("STUDENT", "student_output.half()")) == []


# Cause 11: a model built on the meta device has no weights: `load_state_dict(..., assign=True)` is
# how it is filled, in the checkpoint's dtype, which the analysis does not know (FLUX's loader
# casts the empty model to bf16 and assigns its bf16 safetensors).
META_LOAD = '''import torch
from torch import nn

with CONTEXT:
    model = nn.Linear(4, 4).to(torch.bfloat16)
sd = load_file(path)
model.load_state_dict(sd, strict=False, assign=True)
'''


def test_assign_into_an_empty_meta_model_takes_the_checkpoints_dtype_silently():
    def found(context):
        return [(c, line) for c, line, _ in _at(META_LOAD.replace("CONTEXT", context), "util.py", Confidence.MEDIUM)
                if c == "DTL602"]
    assert found('torch.device("meta")') == []
    assert found("init_empty_weights()") == []
    # twin: a model with real weights, cast and then replaced by the checkpoint's tensors
    assert found('torch.device("cuda")') == [("DTL602", 7)]


# Cause 12: a bf16 model chosen only where the --fp16 flag is off never meets the fp16 Trainer's
# scaler (QLoRA: `torch_dtype=(torch.float32 if args.fp16 else (torch.bfloat16 if args.bf16 ...))`).
FP16_FLAG_CHOICE = '''import torch
from transformers import AutoModelForCausalLM, HfArgumentParser, Seq2SeqTrainer, Seq2SeqTrainingArguments


def train():
    parser = HfArgumentParser((Seq2SeqTrainingArguments,))
    training_args, = parser.parse_args_into_dataclasses()
    args = training_args
CHOICE
    model = AutoModelForCausalLM.from_pretrained("m", torch_dtype=dtype)
    Seq2SeqTrainer(model=model, args=training_args).train()
'''


def test_a_bf16_model_chosen_only_without_the_fp16_flag_is_not_scaled():
    def found(choice):
        return [c for c, _, _ in _at(FP16_FLAG_CHOICE.replace("CHOICE", choice), "qlora.py", Confidence.MEDIUM)
                if c == "DTL301"]
    assert found("    dtype = torch.float32 if args.fp16 else (torch.bfloat16 if args.bf16 else torch.float32)") == []
    assert found("    dtype = torch.bfloat16 if not args.fp16 else torch.float32") == []
    assert found("    if args.fp16:\n        dtype = torch.float32\n    else:\n        dtype = torch.bfloat16") == []
    # twins: bf16 chosen on another flag, or always
    assert found("    dtype = torch.float32 if args.bf16 else torch.bfloat16") == ["DTL301"]
    assert found("    dtype = torch.bfloat16") == ["DTL301"]


# Cause 13: CLIP's learned temperature, `nn.Parameter(torch.ones([]) * np.log(1 / 0.07))`, is one
# number that training keeps near its start (clamped to log(100)); its exp is no overflow risk in
# float16 the way activations are.
LEARNED_SCALE = '''import numpy as np
import torch
from torch import nn


class Clip(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        INIT

    def forward(self, x):
        x = self.proj(x)
        EXP
        return scale * x


model = Clip().cuda().half()
model(torch.randn(2, 8, device="cuda").half())
'''


def test_the_exp_of_a_learned_scalar_is_not_an_overflow_risk_but_of_activations_it_is():
    def found(init, exp):
        text = LEARNED_SCALE.replace("INIT", init).replace("EXP", exp)
        return [c for c, _, _ in _at(text, "clip.py", Confidence.MEDIUM) if c == "DTL503"]
    clip = "self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))"
    assert found(clip, "scale = self.logit_scale.exp()") == []
    assert found("self.temperature = nn.Parameter(torch.tensor(0.07).log())",
                 "logit_scale = self.temperature\n        scale = logit_scale.exp()") == []
    # twins: the exp of the activations, and of a parameter as wide as the features
    assert found(clip, "scale = x.exp()") == ["DTL503"]
    assert found("self.logit_scale = nn.Parameter(torch.ones(8))", "scale = self.logit_scale.exp()") == ["DTL503"]

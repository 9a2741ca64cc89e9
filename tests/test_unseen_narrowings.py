"""Findings read DEBATABLE or FALSE on unseen repositories (benchmarks/UNSEEN-TRIAGE-*.tsv),
narrowed by a general fact: each case is the reduced shape of the rows, with the case that must
still be reported at the default confidence."""

from __future__ import annotations

import textwrap

from conftest import FIXTURES
from dtype_lint.config import Settings
from dtype_lint.engine import check_text
from dtype_lint.findings import Confidence


def _findings(source: str, code: str, *, filename: str = "train.py", low: bool = False):
    settings = Settings(select=(code,), min_confidence=Confidence.LOW if low else Confidence.MEDIUM)
    report = check_text(textwrap.dedent(source), filename, settings)
    assert not report.internal_errors, report.internal_errors
    return report.findings


# -- DTL406: the flag is what the Accelerator is given ------------------------------------------

def test_dtl406_flag_passed_to_the_accelerator_is_reported_at_low_only():
    source = (FIXTURES / "shapes" / "accelerate_flag_passed_weight_dtype_clean.py").read_text()
    assert _findings(source, "DTL406") == []
    low = _findings(source, "DTL406", low=True)
    assert len(low) == 4 and {f.confidence for f in low} == {Confidence.LOW}


def test_dtl406_flag_the_accelerator_never_sees_stays_medium():
    source = (FIXTURES / "shapes" / "accelerate_weight_dtype_from_args.py").read_text()
    assert [f.confidence for f in _findings(source, "DTL406")] == [Confidence.MEDIUM] * 2


# -- DTL205: a validation loss under no_grad is a logged metric ----------------------------------

def test_dtl205_loss_under_no_grad_is_low_and_the_training_loss_stays():
    source = (FIXTURES / "amp_dtype" / "eval_loss_outside_autocast_no_grad.py").read_text()
    low = _findings(source, "DTL205", low=True)
    assert sorted((f.line, f.confidence) for f in low) == [
        (13, Confidence.MEDIUM), (26, Confidence.LOW), (36, Confidence.LOW)]



# -- DTL208: a backward whose gradients no optimizer applies -------------------------------------

def test_dtl208_backward_without_any_optimizer_step_is_silent():
    source = (FIXTURES / "amp_dtype" / "fp16_backward_gradient_check_clean.py").read_text()
    assert _findings(source, "DTL208", low=True) == []  # DTL208 is silent at low


STEPPED = '''import torch
def train(model, loader, OPT):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x, y)
        loss.backward()
        STEP
'''


def test_dtl208_an_optimizer_step_in_the_file_keeps_it():
    for opt, step in (("opt", "opt.step()"), ("optimizer", "optimizer.step(closure)"),
                      ("self", "self.optimizer_step()"), ("sgd", "sgd.step()")):
        source = STEPPED.replace("OPT", opt).replace("STEP", step)
        assert [f.code for f in _findings(source, "DTL208")] == ["DTL208"], step


# -- DTL506: an arange bounded by a count of beams is no position -----------------------------

def test_dtl506_min_with_a_sequence_length_still_fires():
    source = (FIXTURES / "numerics" / "lowp_positions_beam_count_clean.py").read_text()
    assert _findings(source, "DTL506") == []
    twin = source.replace("k = min(beam_size * 2, lprobs.size(-1) - 1)", "k = min(seq_len * 2, lprobs.size(-1) - 1)") \
        .replace("beam_size: int", "seq_len: int")
    assert [f.line for f in _findings(twin, "DTL506")] == [11]


def test_dtl208_a_speed_benchmark_times_its_steps_the_same_loop_elsewhere_is_reported():
    source = (FIXTURES / "amp_dtype" / "bench_fp16_autocast_steps.py").read_text()
    for path in ("bench.py", "gpt_bench.py", "benchmark_gpt.py"):
        assert _findings(source, "DTL208", filename=path) == [], path
    for path in ("train.py", "workbench.py", "benchmarks/train.py"):
        assert [f.code for f in _findings(source, "DTL208", filename=path)] == ["DTL208"], path


# -- DTL113: the file's own calls all ask for float32 -------------------------------------------

def test_dtl113_callers_asking_float32_are_low_and_a_low_caller_keeps_it():
    source = (FIXTURES / "plain" / "dtype_param_callers_ask_float32.py").read_text()
    assert _findings(source, "DTL113") == []
    low = _findings(source, "DTL113", low=True)
    assert [(f.line, f.confidence) for f in low] == [(15, Confidence.LOW), (27, Confidence.LOW)]
    assert all("ask for float32" in f.message for f in low)
    twin = (FIXTURES / "plain" / "dtype_param_callers_ask_low.py").read_text()
    assert [(f.line, f.confidence) for f in _findings(twin, "DTL113")] == [(10, Confidence.MEDIUM), (23, Confidence.MEDIUM)]
    # a float16 literal at one of the calls keeps it too
    asked_half = source.replace("make_batch(2, 8, 16, torch.float)", "make_batch(2, 8, 16, torch.float16)")
    assert [f.line for f in _findings(asked_half, "DTL113")] == [27]


# -- DTL510: a dtype test is no low-precision run ---------------------------------------------

def test_dtl510_a_file_that_only_tests_for_half_is_silent_and_a_cast_keeps_it():
    source = (FIXTURES / "shapes" / "param_dtype_clean_dtype_test_only.py").read_text()
    assert _findings(source, "DTL510") == []
    # the same file with one real cast to half runs low precision: both factories are reported
    cast = source + "\n\nmodel = Gate().half()\n"
    assert [f.line for f in _findings(cast, "DTL510")] == [20, 40]
    spelled = source + "\n\ndef infer(model, batch):\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n        return model(batch)\n"
    assert [f.line for f in _findings(spelled, "DTL510")] == [20, 40]


# -- tests named for a precision mechanism exercise it on purpose ---------------------------------

AUTOCAST_BACKWARD_TEST = '''
import torch
from torch import nn


def NAME():
    layer = nn.Linear(2, 1)
    x = torch.randn(1, 2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = layer(x).mean()
        loss.backward()
    assert layer.weight.grad is not None
'''


def test_a_test_named_for_autocast_is_low_and_other_tests_stay_medium():
    for name in ("test_torch_autocast_cache_behavior_with_no_grad", "test_amp_with_no_grad", "test_grad_scaler_step",
                 "test_fp16_backward"):
        source = AUTOCAST_BACKWARD_TEST.replace("NAME", name)
        assert _findings(source, "DTL204", filename="tests/plugins/test_amp.py") == [], name
        assert [f.confidence for f in _findings(source, "DTL204", filename="tests/plugins/test_amp.py", low=True)] \
            == [Confidence.LOW], name
    for name in ("test_training_step", "test_example_camp_site", "train_one_epoch"):
        source = AUTOCAST_BACKWARD_TEST.replace("NAME", name)
        found = _findings(source, "DTL204", filename="tests/test_loop.py")
        assert [f.confidence for f in found] == [Confidence.MEDIUM], name
    # outside a test file the name changes nothing
    source = AUTOCAST_BACKWARD_TEST.replace("NAME", "test_autocast_backward")
    assert [f.confidence for f in _findings(source, "DTL204", filename="scripts/check_autocast.py")] == [Confidence.HIGH]

"""Issue 21 item 6: low confidence is worth reading or it goes.

Forty low-only findings sampled on 17 unseen repositories (benchmarks/LOWCONF-TRIAGE.tsv) were
0 true; each case below is the shape of a sampled row, reduced. The rules that reported them
stay silent where they can only say "low", even with ``--min-confidence low``; what they know
at medium is still reported."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import run_cli
from dtype_lint.config import Settings
from dtype_lint.engine import check_text
from dtype_lint.findings import Confidence
from dtype_lint.rules.base import SILENT_AT_LOW

# (rule, file name, source): each was reported at low before, and read FALSE or DEBATABLE.
GUESSES = [
    # FastChat apply_delta.py: a LLaMA delta script; LLaMA was released in float16
    ("DTL507", "apply_delta.py", """\
        import torch
        from transformers import AutoModelForCausalLM
        def apply_delta(base_model_path):
            return AutoModelForCausalLM.from_pretrained(base_model_path, torch_dtype=torch.float16)
        """),
    # peft peft_model.py: an integer attention mask padded with float ones
    ("DTL510", "peft_model.py", """\
        import torch
        def concat(attention_mask, batch_size, n):
            prefix = torch.ones(batch_size, n).to(attention_mask.device)
            return torch.cat((prefix, attention_mask), dim=1)
        """),
    # peft examples: bfloat16 hard-coded for a model the example runs on current GPUs
    ("DTL203", "finetune.py", """\
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("m", dtype=torch.bfloat16, device_map="auto")
        """),
    # InternVL: a float32 checkpoint loaded into a float16 inference model (weights << 65504)
    ("DTL602", "load.py", """\
        import torch
        from torch import nn
        model = nn.Linear(4, 4).to(torch.float16)
        model.load_state_dict(torch.load("ckpt.pt"), strict=False)
        """),
]


def _findings(code: str, filename: str, source: str):
    # torch 1.13, as peft declares: DTL203 speaks only to projects that support torch < 2.3
    settings = Settings(select=(code,), min_confidence=Confidence.LOW, target_torch="1.13")
    report = check_text(textwrap.dedent(source), filename, settings)
    assert not report.internal_errors, report.internal_errors
    return report.findings


@pytest.mark.parametrize(("code", "filename", "source"), GUESSES, ids=[g[0] for g in GUESSES])
def test_a_guess_is_not_reported_even_at_min_confidence_low(code, filename, source):
    assert _findings(code, filename, source) == []


def test_a_medium_finding_in_a_test_file_drops_out_instead_of_going_low():
    # accelerate tests/test_quantization.py: bloom-1b7 loaded in float16 to measure its memory;
    # the same line outside a test file is still reported at medium.
    source = """\
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("google/flan-t5-xl", torch_dtype=torch.float16)
        """
    assert [f.confidence for f in _findings("DTL507", "convert.py", source)] == [Confidence.MEDIUM]
    assert _findings("DTL507", "tests/test_quantization.py", source) == []


def test_what_the_rules_know_at_medium_is_still_reported():
    source = """\
        import torch
        from torch import nn
        class Noisy(nn.Module):
            def forward(self, x):
                return x + torch.randn(x.shape, device=x.device)
        model = Noisy().half()
        """
    assert [f.confidence for f in _findings("DTL510", "noisy.py", source)] == [Confidence.MEDIUM]


def test_the_cli_at_min_confidence_low_prints_none_of_them(tmp_path):
    for index, (_, filename, source) in enumerate(GUESSES):
        (tmp_path / f"{index}_{filename}").write_text(textwrap.dedent(source))
    codes = ",".join(sorted({code for code, _, _ in GUESSES}))
    result = run_cli(
        "check", "--no-cache", "--select", codes, "--min-confidence", "low", "--target-torch", "1.13",
        "--format", "json", str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_only_dtype_tracking_rules_go_silent():
    assert not SILENT_AT_LOW & {"DTL001", "DTL201", "DTL210", "DTL601", "DTL701"}

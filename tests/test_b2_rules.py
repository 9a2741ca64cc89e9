"""What the example and fixture harnesses cannot show for the DTL2xx/3xx/6xx/7xx dtype rules:
settings that change a rule's advice (DTL601's target-transformers gate), confidence levels,
and fixes run end to end through the real CLI."""

from __future__ import annotations

import textwrap

import pytest

from conftest import run_cli
from dtype_lint.config import Settings
from dtype_lint.edits import apply_edits
from dtype_lint.engine import check_text
from dtype_lint.findings import Confidence, Safety

LOAD = textwrap.dedent(
    """\
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16)
    """
)


def _findings(source: str, code: str, **settings):
    report = check_text(source, "train.py", Settings(select=(code,), min_confidence=Confidence.LOW, **settings))
    assert not report.internal_errors, report.internal_errors
    return report.findings


@pytest.mark.parametrize("target", ["4.56", "4.57.1", "5.0"])
def test_dtl601_renames_when_the_project_targets_4_56_or_later(target):
    [finding] = _findings(LOAD, "DTL601", target_transformers=target)
    assert finding.confidence is Confidence.HIGH
    assert finding.fix is not None and finding.fix.safety is Safety.SAFE
    assert apply_edits(LOAD, finding.fix.edits) == LOAD.replace("torch_dtype=", "dtype=")


@pytest.mark.parametrize("target", ["4.55", "4.40.2", "3.0"])
def test_dtl601_is_silent_for_projects_on_older_transformers(target):
    assert _findings(LOAD, "DTL601", target_transformers=target) == []


def test_dtl601_without_a_target_reports_but_offers_no_fix():
    [finding] = _findings(LOAD, "DTL601")
    assert finding.confidence is Confidence.MEDIUM
    assert finding.fix is None
    assert "target-transformers" in finding.message


def test_dtl601_gives_no_fix_when_dtype_is_already_passed():
    source = LOAD.replace("torch_dtype=torch.float16", "dtype=torch.float16, torch_dtype=torch.float16")
    [finding] = _findings(source, "DTL601", target_transformers="4.56")
    assert finding.fix is None


def test_dtl601_fix_through_the_cli_reads_target_from_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\ntarget-transformers = "4.56"\n')
    script = tmp_path / "train.py"
    script.write_text(LOAD)
    result = run_cli("fix", "--select", "DTL601", str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert script.read_text() == LOAD.replace("torch_dtype=", "dtype=")
    again = run_cli("check", "--no-cache", "--select", "DTL601", str(script), cwd=tmp_path)
    assert again.returncode == 0, again.stdout


def test_dtl601_check_without_target_leaves_the_file_alone(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(LOAD)
    result = run_cli("fix", "--select", "DTL601", str(script), cwd=tmp_path)
    assert result.returncode == 1  # the finding remains: nothing to fix it with
    assert script.read_text() == LOAD


def test_dtl301_fix_is_unsafe_and_needs_the_flag(tmp_path):
    source = textwrap.dedent(
        """\
        import torch

        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x)
        """
    )
    script = tmp_path / "train.py"
    script.write_text(source)
    safe_only = run_cli("fix", "--select", "DTL301", str(script), cwd=tmp_path)
    assert safe_only.returncode == 1
    assert script.read_text() == source
    unsafe = run_cli("fix", "--unsafe-fixes", "--select", "DTL301", str(script), cwd=tmp_path)
    assert unsafe.returncode == 0, unsafe.stdout + unsafe.stderr
    assert script.read_text() == source.replace('GradScaler("cuda")', 'GradScaler("cuda", enabled=False)')


def test_dtl301_union_dtype_is_medium_and_literal_bf16_is_high():
    union = textwrap.dedent(
        """\
        import torch
        amp_dtype = torch.bfloat16 if args.bf16 else torch.float16
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=amp_dtype):
            loss = model(x)
        """
    )
    [finding] = _findings(union, "DTL301")
    assert finding.confidence is Confidence.MEDIUM
    literal = union.replace("dtype=amp_dtype", "dtype=torch.bfloat16")
    [finding] = _findings(literal, "DTL301")
    assert finding.confidence is Confidence.HIGH


def test_dtl208_message_names_the_autocast_and_its_dtype_source():
    source = textwrap.dedent(
        """\
        import torch
        for x, y in loader:
            with torch.autocast("cuda"):
                loss = model(x, y)
            loss.backward()
        """
    )
    [finding] = _findings(source, "DTL208")
    assert finding.line == 5
    assert "line 3" in finding.message and "CUDA default" in finding.message

"""``check --write-baseline`` / ``--baseline`` / ``baseline = "..."``: adopting on code with findings.

The main scenario runs on a real git history: a baseline is written and committed, then lines are
inserted above the recorded findings, a variable is renamed in another statement and one new
defect is added: exactly that one is reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import run_cli

GIT_ID = ["-c", "user.name=Baseline Test", "-c", "user.email=baseline@example.invalid", "-c", "commit.gpgsign=false"]
ONLY = ["--select", "DTL201", "--no-cache"]

LEGACY = textwrap.dedent(
    """\
    import torch


    class Trainer:
        def step(self, model, batch):
            scaler = torch.cuda.amp.GradScaler()
            with torch.cuda.amp.autocast():
                loss = model(batch)
            return loss


    def evaluate(model, batch):
        with torch.cuda.amp.autocast():
            out = model(batch)
        return out
    """
)


def _git(cwd: Path, *args: str) -> str:
    result = subprocess.run(["git", *GIT_ID, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _rows(stdout: str) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["code"]) for f in json.loads(stdout)]


def _repository(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / "train.py").write_text(LEGACY)
    written = run_cli("check", *ONLY, "--write-baseline", "dtype-lint-baseline.json", ".", cwd=project)
    assert written.returncode == 0, written.stderr
    assert "wrote 3 findings" in written.stderr
    _git(project, "add", ".")
    _git(project, "commit", "-q", "-m", "legacy code and its baseline")
    return project


def _evolve(project: Path) -> None:
    """Shift every line down, rename a variable in statements without findings, add one defect."""
    text = (project / "train.py").read_text()
    text = text.replace("import torch\n", "import torch\nimport os\n\nSEED = int(os.environ.get('SEED', 0))\n", 1)
    text = text.replace("out = model(batch)", "prediction = model(batch)").replace("return out", "return prediction")
    text += "\n\ndef export(model):\n    return torch.cuda.amp.GradScaler()\n"
    (project / "train.py").write_text(text)


def test_baseline_on_a_real_history_reports_only_the_new_defect(tmp_path):
    project = _repository(tmp_path)
    assert run_cli("check", *ONLY, "--baseline", "dtype-lint-baseline.json", ".", cwd=project).returncode == 0
    _evolve(project)
    _git(project, "commit", "-q", "-am", "refactor, and a new scaler")
    everything = run_cli("check", *ONLY, "--format", "json", ".", cwd=project)
    assert len(_rows(everything.stdout)) == 4
    new = run_cli("check", *ONLY, "--format", "json", "--baseline", "dtype-lint-baseline.json", ".", cwd=project)
    assert new.returncode == 1, new.stderr
    assert _rows(new.stdout) == [("train.py", 22, "DTL201")]
    assert "no longer match" not in new.stderr
    # With review mode on top: the new defect is on a changed line, so it stays; the old ones,
    # shifted (changed lines too), are still held back by the baseline.
    reviewed = run_cli(
        "check", *ONLY, "--format", "json", "--baseline", "dtype-lint-baseline.json", "--diff-base", "HEAD~1", ".",
        cwd=project,
    )
    assert _rows(reviewed.stdout) == [("train.py", 22, "DTL201")], reviewed.stderr
    # The baseline also applies from another working directory (paths are the baseline's own).
    elsewhere = run_cli(
        "check", *ONLY, "--format", "json", "--baseline", str(project / "dtype-lint-baseline.json"), str(project),
        cwd=tmp_path,
    )
    assert [line for _, line, _ in _rows(elsewhere.stdout)] == [22]


def test_a_finding_moved_to_another_function_is_new_and_a_fixed_one_is_stale(tmp_path):
    project = _repository(tmp_path)
    text = (project / "train.py").read_text()
    # evaluate's autocast moves into a new function; Trainer.step's scaler is fixed.
    text = text.replace("def evaluate(model, batch):", "def validate(model, batch):")
    text = text.replace("torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler("cuda")')
    (project / "train.py").write_text(text)
    result = run_cli("check", *ONLY, "--format", "json", "--baseline", "dtype-lint-baseline.json", ".", cwd=project)
    assert _rows(result.stdout) == [("train.py", 13, "DTL201")]
    assert "2 baseline entries no longer match" in result.stderr
    # Checking only some files counts only their entries as stale; unselected codes are not stale.
    (project / "other.py").write_text("import torch\n")
    narrow = run_cli("check", *ONLY, "--baseline", "dtype-lint-baseline.json", "other.py", cwd=project)
    assert narrow.returncode == 0 and "no longer match" not in narrow.stderr, narrow.stderr
    unselected = run_cli("check", "--select", "DTL3", "--no-cache", "--baseline", "dtype-lint-baseline.json", ".", cwd=project)
    assert "no longer match" not in unselected.stderr, unselected.stderr


def test_baseline_file_is_sorted_and_the_same_whatever_the_hash_seed(tmp_path):
    project = _repository(tmp_path)
    first = (project / "dtype-lint-baseline.json").read_bytes()
    data = json.loads(first)
    keys = [(e["path"], e["code"], e["scope"], e["statement"], e["fingerprint"]) for e in data["entries"]]
    assert keys == sorted(keys) and len(set(e["fingerprint"] for e in data["entries"])) == 3
    assert {e["scope"] for e in data["entries"]} == {"Trainer.step", "evaluate"}
    for seed in ("1", "12345"):
        run_cli("check", *ONLY, "--write-baseline", "again.json", ".", cwd=project, env={"PYTHONHASHSEED": seed})
        assert (project / "again.json").read_bytes() == first


def test_config_baseline_relative_to_the_config_and_sarif_uses_the_same_fingerprints(tmp_path):
    project = _repository(tmp_path)
    (project / "pyproject.toml").write_text('[tool.dtype-lint]\nselect = ["DTL201"]\nbaseline = "dtype-lint-baseline.json"\n')
    (project / "pkg").mkdir()
    _evolve(project)
    result = run_cli("check", "--no-cache", "--format", "json", "train.py", cwd=project)
    assert _rows(result.stdout) == [("train.py", 22, "DTL201")], result.stderr
    # Writing ignores the baseline in force: it records everything.
    run_cli("check", "--no-cache", "--write-baseline", "new.json", ".", cwd=project)
    recorded = {e["fingerprint"] for e in json.loads((project / "new.json").read_text())["entries"]}
    sarif = json.loads(run_cli("check", "--no-cache", "--format", "sarif", "--baseline", "new.json", ".", cwd=project).stdout)
    assert sarif["runs"][0]["results"] == []
    (project / "pyproject.toml").write_text('[tool.dtype-lint]\nselect = ["DTL201"]\n')
    sarif = json.loads(run_cli("check", "--no-cache", "--format", "sarif", ".", cwd=project).stdout)
    assert {r["partialFingerprints"]["dtypeLint/v1"] for r in sarif["runs"][0]["results"]} == recorded


def test_bad_baseline_files_are_one_line_errors(tmp_path):
    (tmp_path / "train.py").write_text(LEGACY)
    missing = run_cli("check", *ONLY, "--baseline", "nope.json", ".", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "nope.json" in missing.stderr
    (tmp_path / "bad.json").write_text("{not json")
    bad = run_cli("check", *ONLY, "--baseline", "bad.json", ".", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.dtype-lint]\nbaseline = 3\n")
    config = run_cli("check", *ONLY, ".", cwd=tmp_path)
    assert config.returncode == 2 and "'baseline'" in config.stderr


def _notebook(*cells: str) -> str:
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c} for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    })


def test_notebook_findings_survive_a_cell_inserted_above(tmp_path):
    defect = "def make():\n    return torch.cuda.amp.GradScaler()"
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch\n", defect))
    run_cli("check", *ONLY, "--write-baseline", "b.json", ".", cwd=tmp_path)
    (entry,) = json.loads((tmp_path / "b.json").read_text())["entries"]
    assert (entry["path"], entry["scope"]) == ("nb.ipynb", "make")
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch\n", "seed = 0\n", defect, "s = torch.cuda.amp.GradScaler()"))
    result = run_cli("check", *ONLY, "--format", "json", "--baseline", "b.json", ".", cwd=tmp_path)
    assert [(f["cell"], f["line"]) for f in json.loads(result.stdout)] == [(4, 1)], result.stderr


def test_flake8_plugin_reads_the_baseline_from_the_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\nbaseline = "b.json"\ntarget-torch = "2.4"\n')
    (tmp_path / "train.py").write_text(LEGACY)
    run_cli("check", "--no-cache", "--write-baseline", "b.json", ".", cwd=tmp_path)
    (tmp_path / "train.py").write_text("# moved down\n" + LEGACY + "\nx = torch.cuda.amp.GradScaler()\n")
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=DTL", "train.py"], cwd=tmp_path, capture_output=True, text=True,
        env=dict(os.environ),
    )
    assert result.stdout.splitlines() == [
        "train.py:18:5: DTL201 `torch.cuda.amp.GradScaler` is deprecated; use `torch.amp.GradScaler(\"cuda\", ...)`"
    ], result.stdout + result.stderr

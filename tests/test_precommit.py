"""The pre-commit hooks, run by real ``pre-commit`` against a throw-away repository.

pre-commit clones this checkout at its current commit (``git rev-parse HEAD``) and installs it
into a virtual environment of its own, so these tests see committed code only. The environment
is built once for the module (one ``PRE_COMMIT_HOME``): the first test pays for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEFECT = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
FIXED = 'import torch\n\nscaler = torch.amp.GradScaler("cuda")\n'
GIT_ID = ["-c", "user.name=Hook Test", "-c", "user.email=hook@example.invalid", "-c", "commit.gpgsign=false"]


def _git(cwd: Path, *args: str) -> str:
    result = subprocess.run(["git", *GIT_ID, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture(scope="module")
def hook_rev() -> str:
    if not (ROOT / ".git").exists():
        pytest.skip("this checkout is not a git repository: pre-commit can only clone a commit")
    rev = _git(ROOT, "rev-parse", "HEAD")
    has_hooks = subprocess.run(["git", "cat-file", "-e", f"{rev}:.pre-commit-hooks.yaml"], cwd=ROOT, capture_output=True)
    assert has_hooks.returncode == 0, ".pre-commit-hooks.yaml must be committed for pre-commit to see it"
    return rev


@pytest.fixture(scope="module")
def precommit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def _project(tmp_path: Path, rev: str, hook_ids: list[str]) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    # args as a user would pass them; the selection keeps other rules (DTL307 on a lone scaler,
    # ...) out of what this test is about.
    hooks = "".join(f'      - id: {hook_id}\n        args: [--select, "DTL001,DTL201"]\n' for hook_id in hook_ids)
    (project / ".pre-commit-config.yaml").write_text(f"repos:\n  - repo: {ROOT}\n    rev: {rev}\n    hooks:\n{hooks}")
    (project / "train.py").write_text(DEFECT)
    (project / "README.md").write_text("not python\n")
    (project / "requirements.txt").write_text("torch>=2.4\n")  # DTL201's replacements exist: safe fixes
    notebook = {
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": DEFECT}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    (project / "explore.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    _git(project, "add", ".")
    return project


def _pre_commit(project: Path, home: Path, **extra_env: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", DTYPE_LINT_CACHE_DIR=str(home / "dl-cache"))
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
        cwd=project, capture_output=True, text=True, env=env, timeout=900,
    )


def test_check_hook_fails_on_a_defect_and_passes_once_fixed(tmp_path, hook_rev, precommit_home):
    project = _project(tmp_path, hook_rev, ["dtype-lint"])
    failed = _pre_commit(project, precommit_home)
    output = failed.stdout + failed.stderr
    assert failed.returncode == 1, output
    assert "dtype-lint" in output and "Failed" in output
    assert "train.py:3:10: DTL201" in output
    assert "explore.ipynb:cell 1:3:10: DTL201" in output  # types_or: jupyter hands notebooks over
    (project / "train.py").write_text(FIXED)
    (project / "explore.ipynb").unlink()
    _git(project, "add", "-A")
    passed = _pre_commit(project, precommit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout


def test_fix_hook_rewrites_and_fails_then_passes(tmp_path, hook_rev, precommit_home):
    project = _project(tmp_path, hook_rev, ["dtype-lint-fix"])
    first = _pre_commit(project, precommit_home)
    assert first.returncode == 1, first.stdout + first.stderr  # --exit-non-zero-on-fix: it changed files
    assert "files were modified by this hook" in first.stdout
    assert (project / "train.py").read_text() == FIXED
    cells = json.loads((project / "explore.ipynb").read_text())["cells"]
    assert "".join(cells[0]["source"]) == FIXED
    _git(project, "add", "-A")
    second = _pre_commit(project, precommit_home)
    assert second.returncode == 0, second.stdout + second.stderr


def test_check_hook_applies_the_configured_baseline(tmp_path, hook_rev, precommit_home):
    project = _project(tmp_path, hook_rev, ["dtype-lint"])
    (project / "pyproject.toml").write_text('[tool.dtype-lint]\nbaseline = "dtype-lint-baseline.json"\n')
    written = subprocess.run(
        [sys.executable, "-m", "dtype_lint", "check", "--select", "DTL001,DTL201", "--no-cache",
         "--write-baseline", "dtype-lint-baseline.json", "."],
        cwd=project, capture_output=True, text=True, timeout=300,
    )
    assert written.returncode == 0, written.stderr
    (project / "train.py").write_text("# a header line\n" + DEFECT)
    _git(project, "add", "-A")
    passed = _pre_commit(project, precommit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr  # only baselined findings, shifted
    (project / "train.py").write_text("# a header line\n" + DEFECT + "again = torch.cuda.amp.GradScaler()\n")
    _git(project, "add", "-A")
    failed = _pre_commit(project, precommit_home)
    output = failed.stdout + failed.stderr
    assert failed.returncode == 1 and "train.py:5:9: DTL201" in output and "train.py:4:" not in output, output


def test_check_hook_honours_exclude_for_the_files_it_is_given(tmp_path, hook_rev, precommit_home):
    project = _project(tmp_path, hook_rev, ["dtype-lint"])
    (project / "train.py").write_text(FIXED)
    (project / "explore.ipynb").unlink()
    (project / "legacy").mkdir()
    (project / "legacy" / "old.py").write_text(DEFECT)
    (project / "pyproject.toml").write_text('[tool.dtype-lint]\nexclude = ["legacy"]\n')
    _git(project, "add", "-A")
    result = _pre_commit(project, precommit_home)  # pre-commit names legacy/old.py: force-exclude drops it
    assert result.returncode == 0, result.stdout + result.stderr
    (project / "pyproject.toml").write_text("[tool.dtype-lint]\n")
    _git(project, "add", "-A")
    result = _pre_commit(project, precommit_home)
    assert result.returncode == 1 and "legacy/old.py:3:10: DTL201" in result.stdout


def test_readme_example_works_as_written_after_autoupdate_against_a_local_clone(tmp_path, precommit_home):
    """The README's .pre-commit-config.yaml, word for word but for the repository's URL (this
    machine cannot reach it), then the `pre-commit autoupdate` the README asks for, against a clone
    of this commit standing in for the repository, whose `main` it is."""
    import re

    from dtype_lint.rule_docs import HOMEPAGE

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", readme, flags=re.S).group(1)
    url = re.search(r"repo: (\S+)", block).group(1)
    rev = re.search(r"rev: (\S+)", block).group(1)
    # No release tag exists: the README names the branch, and autoupdate pins its commit.
    assert (url, rev) == (HOMEPAGE, "main")
    clone = tmp_path / "dtype-lint"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, capture_output=True, timeout=300)
    head = _git(clone, "rev-parse", "HEAD")
    _git(clone, "update-ref", "refs/heads/main", head)
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    config = project / ".pre-commit-config.yaml"
    config.write_text(block.replace(url, str(clone)))
    (project / "train.py").write_text(DEFECT)
    _git(project, "add", ".")
    env = dict(os.environ, PRE_COMMIT_HOME=str(precommit_home), PRE_COMMIT_COLOR="never")
    updated = subprocess.run(
        [sys.executable, "-m", "pre_commit", "autoupdate"], cwd=project, capture_output=True, text=True, env=env, timeout=300,
    )
    assert updated.returncode == 0, updated.stdout + updated.stderr
    # A tag here would mean a release exists: the README should then name it instead of main.
    assert f"    rev: {head}  # no release tag yet" in config.read_text(), config.read_text()
    _git(project, "add", ".")
    result = _pre_commit(project, precommit_home)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train.py:3:10: DTL201" in result.stdout
    assert "mutable reference" not in result.stdout + result.stderr


def test_local_hook_of_the_integration_docs_runs_the_installed_dtype_lint(tmp_path, precommit_home):
    """docs/integrations.md's `repo: local` hook, word for word: pre-commit installs nothing and
    runs the dtype-lint of the environment (this test's, first on PATH)."""
    import re

    docs = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# \.pre-commit-config\.yaml\nrepos:\n  - repo: local\n.*?)```", docs, flags=re.S).group(1)
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(block)
    (project / "train.py").write_text(DEFECT)
    _git(project, "add", ".")
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    result = _pre_commit(project, precommit_home, PATH=path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train.py:3:10: DTL201" in result.stdout

"""Review mode (``check --diff-base REF``) against real throw-away git repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dtype_lint.review import changed_program_lines, parse_diff
from tests.conftest import run_cli

# The features under test, not the rule catalogue: other rules (DTL307, ...) rightly fire on
# these snippets too, and their findings are not what these tests are about.
ONLY = ("--select", "DTL001,DTL201")

OLD = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
GIT_ID = ["-c", "user.name=Review Test", "-c", "user.email=review@example.invalid", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", *GIT_ID, *args], cwd=repo, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "train.py").write_text(OLD)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path


def findings(repo: Path, *args: str, stdin: str | None = None) -> list[tuple[str, int, str]]:
    result = run_cli("check", *ONLY, "--no-cache", "--format", "json", *args, cwd=repo, stdin=stdin)
    assert result.returncode in (0, 1), result.stderr
    return [(f["path"], f["line"], f["code"]) for f in json.loads(result.stdout)]


def test_only_lines_added_since_the_base_are_reported(repo):
    (repo / "train.py").write_text(OLD + "x = 1\nother = torch.cuda.amp.GradScaler()\n")
    git(repo, "commit", "-q", "-am", "add a scaler")
    assert findings(repo, "train.py") == [("train.py", 2, "DTL201"), ("train.py", 4, "DTL201")]
    assert findings(repo, "--diff-base", "HEAD~1", "train.py") == [("train.py", 4, "DTL201")]
    assert findings(repo, "--diff-base", "HEAD", "train.py") == []


def test_uncommitted_changes_and_untracked_files_count(repo):
    (repo / "train.py").write_text(OLD.replace("scaler =", "my_scaler ="))  # a changed line
    (repo / "new.py").write_text(OLD)  # never committed: new in full
    result = run_cli("check", *ONLY, "--no-cache", "--diff-base", "HEAD", ".", cwd=repo)
    assert result.returncode == 1
    assert findings(repo, "--diff-base", "HEAD", ".") == [("new.py", 2, "DTL201"), ("train.py", 2, "DTL201")]


def test_analysis_still_sees_the_whole_file(repo):
    # The import that makes `amp.GradScaler` deprecated is old; only the use is new.
    base = "from torch.cuda import amp\nimport torch\n"
    (repo / "loop.py").write_text(base)
    git(repo, "add", "loop.py")
    git(repo, "commit", "-q", "-m", "imports")
    (repo / "loop.py").write_text(base + "scaler = amp.GradScaler()\n")
    assert findings(repo, "--diff-base", "HEAD", "loop.py") == [("loop.py", 3, "DTL201")]


def test_a_branch_compared_with_its_merge_base(repo):
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "model.py").write_text("import torch\n\n\nwith torch.cuda.amp.autocast():\n    pass\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "feature")
    base = git(repo, "merge-base", "main", "HEAD").strip()
    assert findings(repo, "--diff-base", base, ".") == [("pkg/model.py", 4, "DTL201")]
    assert findings(repo, "--diff-base", "main", "pkg") == [("pkg/model.py", 4, "DTL201")]


def test_multi_line_finding_kept_when_any_of_its_lines_changed(repo):
    (repo / "train.py").write_text("import torch\nscaler = (torch.cuda\n    .amp.GradScaler)()\nx = 1\n")
    git(repo, "commit", "-q", "-am", "multi-line")
    # The finding spans lines 2-3; only line 3 changes.
    (repo / "train.py").write_text("import torch\nscaler = (torch.cuda\n        .amp.GradScaler)()\nx = 1\n")
    assert findings(repo, "--diff-base", "HEAD", "train.py") == [("train.py", 2, "DTL201")]
    # A change on the next line is not a change of the finding.
    (repo / "train.py").write_text("import torch\nscaler = (torch.cuda\n    .amp.GradScaler)()\nx = 2\n")
    assert findings(repo, "--diff-base", "HEAD", "train.py") == []


def test_parse_errors_reported_whenever_the_file_changed(repo):
    (repo / "train.py").write_text(OLD + "def broken(:\n")
    assert findings(repo, "--diff-base", "HEAD", "train.py") == [("train.py", 3, "DTL001")]


def test_notebook_cells_compared_as_programs(repo):
    def notebook(*sources: str) -> str:
        cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s} for s in sources]
        return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)

    (repo / "nb.ipynb").write_text(notebook("import torch\n", "a = torch.cuda.amp.GradScaler()"))
    git(repo, "add", "nb.ipynb")
    git(repo, "commit", "-q", "-m", "notebook")
    # A new cell inserted before the old one: only its line is new; the old cell moved to cell 3.
    (repo / "nb.ipynb").write_text(
        notebook("import torch\n", "b = torch.cuda.amp.GradScaler()", "a = torch.cuda.amp.GradScaler()")
    )
    result = run_cli("check", *ONLY, "--no-cache", "--format", "json", "--diff-base", "HEAD", "nb.ipynb", cwd=repo)
    reported = [(f["cell"], f["line"]) for f in json.loads(result.stdout)]
    assert reported == [(2, 1)]


def test_stdin_is_compared_with_the_file_at_the_base(repo):
    new = OLD + "again = torch.cuda.amp.GradScaler()\n"
    assert findings(repo, "--diff-base", "HEAD", "--stdin-filename", "train.py", "-", stdin=new) == [
        ("train.py", 3, "DTL201")
    ]


def test_errors_are_usage_errors(repo, tmp_path_factory):
    bad_ref = run_cli("check", *ONLY, "--diff-base", "no-such-branch", "train.py", cwd=repo)
    assert bad_ref.returncode == 2 and "unknown revision" in bad_ref.stderr
    elsewhere = tmp_path_factory.mktemp("not_a_repo")
    (elsewhere / "a.py").write_text(OLD)
    no_repo = run_cli("check", *ONLY, "--diff-base", "HEAD", "a.py", cwd=elsewhere)
    assert no_repo.returncode == 2 and "git repository" in no_repo.stderr


def test_parse_diff_reads_hunks_and_odd_paths():
    diff = (
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,0 +2,3 @@\n+a\n+b\n+c\n@@ -9 +12 @@\n-q\n+r\n"
        "@@ -20,2 +22,0 @@\n-gone\n-gone\n"
        'diff --git "a/t\\tab.py" "b/t\\tab.py"\n--- "a/t\\tab.py"\n+++ "b/t\\tab.py"\n@@ -0,0 +1 @@\n+new\n'
        "diff --git a/old.py b/old.py\n--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
        "diff --git a/my file.py b/my file.py\n--- a/my file.py\t\n+++ b/my file.py\t\n@@ -3 +3,2 @@\n-a\n+b\n+c\n"
    )
    assert parse_diff(diff) == {"x.py": {2, 3, 4, 12}, "t\tab.py": {1}, "my file.py": {3, 4}}


def test_changed_program_lines():
    assert changed_program_lines("a\nb\nc\n", "a\nB\nc\nd\n") == {2, 4}
    assert changed_program_lines("a\nb\n", "a\nb\n") == set()

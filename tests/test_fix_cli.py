"""``dtype-lint fix`` as users run it: the real entry point in a subprocess."""

from __future__ import annotations

import codecs
import os
import subprocess
import sys

from conftest import FIXTURES, run_cli

TRAIN = '''import torch

scaler = torch.cuda.amp.GradScaler()


def step(model, x):
    with torch.cuda.amp.autocast():
        return model(x)
'''
TRAIN_FIXED = '''import torch

scaler = torch.amp.GradScaler("cuda")


def step(model, x):
    with torch.amp.autocast("cuda"):
        return model(x)
'''
# No ``import torch`` as a module: DTL201 offers no fix here, the finding remains.
UNFIXABLE = "from torch.cuda.amp import GradScaler\n\nscaler = GradScaler()\n"


def _write(directory, name: str, text: str):
    # The project runs on torch >= 2.4, where DTL201's replacements exist: its fixes are safe.
    if not (directory / "requirements.txt").exists():
        (directory / "requirements.txt").write_text("torch>=2.4\n")
    path = directory / name
    path.write_text(text)
    return path


def _run_bytes(*args: str, stdin: bytes, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dtype_lint", *args], input=stdin, capture_output=True, cwd=cwd, timeout=300
    )


def test_fix_applies_safe_fixes_and_reports_what_changed(tmp_path):
    path = _write(tmp_path, "train.py", TRAIN)
    result = run_cli("fix", "train.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert path.read_text() == TRAIN_FIXED
    assert result.stdout.splitlines() == ["Fixed train.py: 2 × DTL201", "Fixed 2 errors (0 remaining)."]


def test_findings_left_are_listed_and_exit_1(tmp_path):
    _write(tmp_path, "train.py", TRAIN)
    _write(tmp_path, "legacy.py", UNFIXABLE)
    result = run_cli("fix", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "legacy.py:3:10: DTL201 `torch.cuda.amp.GradScaler` is deprecated" in result.stdout
    assert result.stdout.rstrip().endswith("Fixed 2 errors (1 remaining).")
    assert (tmp_path / "legacy.py").read_text() == UNFIXABLE


def test_second_run_changes_nothing(tmp_path):
    path = _write(tmp_path, "train.py", TRAIN)
    run_cli("fix", "train.py", cwd=tmp_path)
    mtime = os.stat(path).st_mtime_ns
    again = run_cli("fix", "train.py", cwd=tmp_path)
    assert again.returncode == 0
    assert again.stdout.splitlines() == ["Fixed 0 errors (0 remaining)."]
    assert path.read_text() == TRAIN_FIXED and os.stat(path).st_mtime_ns == mtime


def test_exit_non_zero_on_fix(tmp_path):
    _write(tmp_path, "train.py", TRAIN)
    first = run_cli("fix", "--exit-non-zero-on-fix", "train.py", cwd=tmp_path)
    assert first.returncode == 1  # everything fixed, but a file changed: pre-commit must fail the hook
    second = run_cli("fix", "--exit-non-zero-on-fix", "train.py", cwd=tmp_path)
    assert second.returncode == 0


def test_diff_prints_a_patch_writes_nothing_and_exits_1(tmp_path):
    path = _write(tmp_path, "train.py", TRAIN)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    result = run_cli("fix", "--diff", "train.py", cwd=tmp_path)
    assert result.returncode == 1
    assert path.read_text() == TRAIN
    assert result.stdout.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "Would fix 2 errors (0 remaining)." in result.stderr  # stdout holds only the patch
    # The patch is a real one: git applies it and gets what ``fix`` writes.
    subprocess.run(["git", "apply", "-"], input=result.stdout, text=True, cwd=tmp_path, check=True)
    assert path.read_text() == TRAIN_FIXED
    clean = run_cli("fix", "--diff", "train.py", cwd=tmp_path)
    assert clean.returncode == 0 and clean.stdout == ""


def test_stdin_gives_fixed_source_on_stdout_bytes_exact():
    source = codecs.BOM_UTF8 + TRAIN.replace("\n", "\r\n").encode()
    result = _run_bytes("fix", "-", "--target-torch", "2.4", stdin=source)
    assert result.returncode == 0, result.stderr
    assert result.stdout == codecs.BOM_UTF8 + TRAIN_FIXED.replace("\n", "\r\n").encode()
    assert b"Fixed 2 errors (0 remaining)." in result.stderr


def test_stdin_with_findings_left_echoes_source_and_exits_1():
    result = _run_bytes("fix", "-", "--stdin-filename", "legacy.py", "--target-torch", "2.4", stdin=UNFIXABLE.encode())
    assert result.returncode == 1
    assert result.stdout == UNFIXABLE.encode()
    assert b"legacy.py:3:10: DTL201" in result.stderr


def test_stdin_diff():
    result = _run_bytes("fix", "-", "--diff", "--target-torch", "2.4", stdin=TRAIN.encode())
    assert result.returncode == 1
    assert b'+scaler = torch.amp.GradScaler("cuda")\n' in result.stdout


def test_select_and_ignore_limit_what_is_fixed(tmp_path):
    path = _write(tmp_path, "train.py", TRAIN)
    ignored = run_cli("fix", "--ignore", "DTL201", "train.py", cwd=tmp_path)
    assert ignored.returncode == 0 and path.read_text() == TRAIN
    selected = run_cli("fix", "--select", "DTL201", "train.py", cwd=tmp_path)
    assert selected.returncode == 0 and path.read_text() == TRAIN_FIXED


def test_noqa_keeps_a_finding_from_being_fixed(tmp_path):
    text = TRAIN.replace("GradScaler()\n", "GradScaler()  # noqa: DTL201\n")
    path = _write(tmp_path, "train.py", text)
    run_cli("fix", "train.py", cwd=tmp_path)
    assert "torch.cuda.amp.GradScaler()  # noqa: DTL201" in path.read_text()
    assert 'torch.amp.autocast("cuda")' in path.read_text()


def test_files_spread_over_processes(tmp_path):
    for index in range(12):
        _write(tmp_path, f"train_{index:02}.py", TRAIN)
    result = run_cli("fix", "--jobs", "3", ".", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert all((tmp_path / f"train_{index:02}.py").read_text() == TRAIN_FIXED for index in range(12))
    assert result.stdout.splitlines()[-1] == "Fixed 24 errors (0 remaining)."
    assert result.stdout.splitlines()[:12] == [f"Fixed train_{index:02}.py: 2 × DTL201" for index in range(12)]


def test_fallback_fix_is_reported_as_not_applied(tmp_path):
    text = (
        "import torch\n"
        "try:\n"
        "    from apex import fp16_utils\n"
        "except ImportError:  # no apex\n"
        "    scaler = torch.cuda.amp.GradScaler()\n"
    )
    # (After trying `torch.amp`, the except branch is an old-torch fallback: not reported at all.)
    path = _write(tmp_path, "compat.py", text)
    result = run_cli("fix", "compat.py", cwd=tmp_path)
    assert result.returncode == 1
    assert path.read_text() == text
    assert (
        "compat.py:5:14: DTL201 fix not applied automatically: inside a try/except compatibility fallback"
        in result.stdout
    )


def test_json_format_lists_what_is_left(tmp_path):
    import json

    _write(tmp_path, "legacy.py", UNFIXABLE)
    result = run_cli("fix", "--format", "json", "legacy.py", cwd=tmp_path)
    assert result.returncode == 1
    assert [(item["code"], item["line"]) for item in json.loads(result.stdout)] == [("DTL201", 3)]
    assert "Fixed 0 errors (1 remaining)." in result.stderr


def test_missing_path_is_a_finding_left(tmp_path):
    # As `check` (and ruff's E902): DTL001 for the path, the other files fixed, exit 1.
    path = _write(tmp_path, "train.py", TRAIN)
    result = run_cli("fix", "nope.py", "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "nope.py:1:1: DTL001 Cannot check this file: cannot read: No such file or directory" in result.stdout
    assert path.read_text() == TRAIN_FIXED


def test_check_marks_safe_fixes_and_counts_them(tmp_path):
    _write(tmp_path, "train.py", TRAIN)
    _write(tmp_path, "legacy.py", UNFIXABLE)
    result = run_cli("check", ".", cwd=tmp_path)
    assert "train.py:3:10: DTL201 [*] `torch.cuda.amp.GradScaler` is deprecated" in result.stdout
    assert "legacy.py:3:10: DTL201 `torch.cuda.amp.GradScaler` is deprecated" in result.stdout
    assert "[*] 2 fixable with `dtype-lint fix`." in result.stdout


def test_unsafe_fixes_need_the_flag(tmp_path):
    # DTL305's fix (step through the scaler) changes behaviour: unsafe.
    source = FIXTURES / "fixes" / "DTL305.py"
    path = _write(tmp_path, "train.py", source.read_text())
    checked = run_cli("check", "--select", "DTL305", "train.py", cwd=tmp_path)
    assert "train.py:21:13: DTL305 `optimizer.step()`" in checked.stdout  # no [*]: not a safe fix
    assert "(1 more fixable with `dtype-lint fix --unsafe-fixes`.)" in checked.stdout
    safe_only = run_cli("fix", "--select", "DTL305", "train.py", cwd=tmp_path)
    assert safe_only.returncode == 1 and path.read_text() == source.read_text()
    assert "(1 more fix available with `dtype-lint fix --unsafe-fixes`.)" in safe_only.stdout
    unsafe = run_cli("fix", "--select", "DTL305", "--unsafe-fixes", "train.py", cwd=tmp_path)
    assert unsafe.returncode == 0, unsafe.stdout
    fixed = path.read_text()
    assert "optimizer.step()" not in fixed and "scaler.step(optimizer)" in fixed and "scaler.update()" in fixed

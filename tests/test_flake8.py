"""The flake8 plugin against real flake8: same findings, same lines and columns as the CLI."""

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import FIXTURES, run_cli

FLAKE8_FORMAT = "%(path)s|%(row)d|%(col)d|%(code)s"

SOURCE = textwrap.dedent(
    """\
    import torch as T
    from torch.cuda.amp import autocast

    scaler = T.cuda.amp.GradScaler()
    with autocast():
        pass
    kept = T.cuda.amp.GradScaler()  # noqa: DTL201
    also_kept = dict(  # noqa: DTL201
        s=T.cuda.amp.GradScaler(),
    )
    own = T.cuda.amp.GradScaler()  # dtype-lint: ignore[DTL201]
    """
)


def flake8(*args, cwd=None):
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=DTL", f"--format={FLAKE8_FORMAT}", *args],
        capture_output=True, text=True, cwd=cwd,
    )
    assert result.returncode in (0, 1), result.stderr
    rows = []
    for line in result.stdout.splitlines():
        path, row, col, code = line.rsplit("|", 3)
        rows.append((path, int(row), int(col), code))
    return sorted(rows)


def cli_rows(*paths, cwd=None):
    findings = json.loads(run_cli("check", "--format", "json", "--no-cache", *paths, cwd=cwd).stdout)
    return sorted((f["path"], f["line"], f["column"], f["code"]) for f in findings if f["code"] != "DTL001")


def test_plugin_is_registered():
    result = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True)
    assert "dtype-lint" in result.stdout


def test_same_findings_lines_and_columns_as_cli(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    from_flake8 = flake8("train.py", cwd=tmp_path)
    assert from_flake8 == cli_rows("train.py", cwd=tmp_path)
    # Columns are 1-based in both: `T.cuda.amp.GradScaler` starts at column 10.
    assert ("train.py", 4, 10, "DTL201") in from_flake8
    assert [row[1] for row in from_flake8] == [4, 5]


def test_same_findings_on_every_fixture():
    files = sorted(str(p) for p in FIXTURES.rglob("*.py"))
    if not files:
        pytest.skip("no fixtures yet")
    # flake8 hands the plugin one file at a time: it matches the CLI's file-local results. The
    # project pass's extra findings (worlds joined across the paths) are the CLI's alone.
    file_local = cli_rows("--no-project", *files)
    assert flake8(*files) == file_local
    assert set(file_local) <= set(cli_rows(*files))


def test_flake8_select_ignore_and_disable_noqa(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    assert flake8("--extend-ignore=DTL201", "train.py", cwd=tmp_path) == []
    without_noqa = flake8("--disable-noqa", "train.py", cwd=tmp_path)
    # noqa comments no longer count; the tool's own ignore comment still does.
    assert [row[1] for row in without_noqa] == [4, 5, 7, 9]

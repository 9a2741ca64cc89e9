"""``[tool.dtype-lint]`` in the nearest pyproject.toml, CLI overrides, and one-line config errors."""

import json
import textwrap

import pytest

from conftest import run_cli

DEFECT = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"


def project(tmp_path, table: str, files: dict[str, str] | None = None):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.dtype-lint]\n" + textwrap.dedent(table))
    for name, text in (files or {"src/train.py": DEFECT}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def codes(result):
    return [(f["path"], f["code"]) for f in json.loads(result.stdout)]


def test_nearest_pyproject_above_the_checked_path_applies(tmp_path):
    project(tmp_path, 'ignore = ["DTL201"]\n')
    result = run_cli("check", "--format", "json", str(tmp_path / "src"))
    assert result.returncode == 0 and codes(result) == []


def test_cli_flags_override_the_file(tmp_path):
    project(tmp_path, 'ignore = ["DTL201"]\n')
    result = run_cli("check", "--format", "json", "--select", "DTL201", "--ignore", "DTL7", "src", cwd=tmp_path)
    assert codes(result) == [("src/train.py", "DTL201")]


def test_per_file_ignores_and_exclude(tmp_path):
    project(
        tmp_path,
        """\
        exclude = ["legacy"]
        [tool.dtype-lint.per-file-ignores]
        "scripts/*.py" = ["DTL2"]
        """,
        {"scripts/a.py": DEFECT, "src/b.py": DEFECT, "legacy/c.py": DEFECT},
    )
    result = run_cli("check", "--format", "json", ".", cwd=tmp_path)
    assert codes(result) == [("src/b.py", "DTL201")]


def test_min_confidence_and_output_format_keys(tmp_path):
    project(tmp_path, 'min-confidence = "high"\noutput-format = "concise"\n')
    result = run_cli("check", "src", cwd=tmp_path)
    assert result.stdout.splitlines()[0].startswith("src/train.py:2:10: DTL201")
    assert "|" not in result.stdout  # concise: no source excerpt


def test_explicit_config_file(tmp_path):
    (tmp_path / "lint.toml").write_text('select = ["DTL3"]\n')
    (tmp_path / "t.py").write_text(DEFECT)
    assert run_cli("check", "--config", "lint.toml", "t.py", cwd=tmp_path).returncode == 0
    missing = run_cli("check", "--config", "nope.toml", "t.py", cwd=tmp_path)
    assert missing.returncode == 2 and "config file not found" in missing.stderr


@pytest.mark.parametrize(
    "table,message",
    [
        ('colour = "red"\n', "unknown key 'colour'"),
        ('min-confidence = "sure"\n', "min-confidence"),
        ('select = "DTL201"\n', "'select' must be a list"),
        ('ignore = ["E501"]\n', "invalid rule selector"),
        ('output-format = "xml"\n', "output-format"),
        ("select = [\n", "invalid TOML"),
    ],
)
def test_bad_config_is_one_line_error_exit_2(tmp_path, table, message):
    project(tmp_path, table)
    result = run_cli("check", "src", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr

"""Options named as ruff's and flake8's behave as theirs (issue 22), through the real CLI, real
flake8 and real subprocesses on small projects in temporary directories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from xml.etree import ElementTree

import pytest

from conftest import FIXTURES, run_cli

DEFECT = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
# DTL201 (a safe fix) and three findings on a float16 model trained by Adam (DTL302, DTL401, DTL404).
FOUR = (
    "import torch\n"
    "scaler = torch.cuda.amp.GradScaler()\n"
    "model = torch.nn.Linear(2, 2).half()\n"
    "optimizer = torch.optim.Adam(model.parameters(), eps=1e-8)\n"
)


def write(root, files: dict[str, str]):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def concise(result) -> list[str]:
    return [line for line in result.stdout.splitlines() if line and line[0] not in " [(" and ":" in line
            and not line.startswith(("Found ", "All checks"))]


def codes(result) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["code"]) for f in json.loads(result.stdout)]


def flake8_codes(*args: str, cwd) -> list[tuple[str, int, str]]:
    result = subprocess.run([sys.executable, "-m", "flake8", "--select=DTL", "--format=%(path)s|%(row)d|%(code)s",
                             *args], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    rows = [line.rsplit("|", 2) for line in result.stdout.splitlines()]
    return sorted((os.path.normpath(path), int(row), code) for path, row, code in rows)


# -- item 1: `check --unsafe-fixes` shows, `check --fix --unsafe-fixes` applies -------------------
def test_check_unsafe_fixes_only_shows_them(tmp_path):
    source = (FIXTURES / "fixes" / "DTL305.py").read_text()
    path = write(tmp_path, {"train.py": source}) / "train.py"
    shown = run_cli("check", "--select", "DTL305", "--unsafe-fixes", "train.py", cwd=tmp_path)
    assert shown.returncode == 1 and path.read_text() == source  # nothing written, as ruff
    assert "train.py:21:13: DTL305 [*] `optimizer.step()`" in shown.stdout
    assert "[*] 1 fixable with `dtype-lint fix --unsafe-fixes`." in shown.stdout
    applied = run_cli("check", "--select", "DTL305", "--fix", "--unsafe-fixes", "train.py", cwd=tmp_path)
    assert applied.returncode == 0, applied.stdout
    assert "scaler.step(optimizer)" in path.read_text()


# -- item 2: --stdin-filename without '-' reads stdin ---------------------------------------------
def test_stdin_filename_without_paths_reads_stdin(tmp_path):
    write(tmp_path, {"other.py": DEFECT})
    checked = run_cli("check", "--format", "json", "--stdin-filename", "x.py", cwd=tmp_path, stdin=DEFECT)
    assert checked.returncode == 1 and codes(checked) == [("x.py", 2, "DTL201")]
    fixed = run_cli("fix", "--target-torch", "2.4", "--stdin-filename", "x.py", cwd=tmp_path, stdin=DEFECT)
    assert fixed.stdout == 'import torch\nscaler = torch.amp.GradScaler("cuda")\n'
    assert (tmp_path / "other.py").read_text() == DEFECT


# -- item 3: noqa at the end of a backslash continuation, as flake8 -------------------------------
CONTINUED = (
    "import torch\n"
    "scaler = torch.cuda.amp.GradScaler() \\\n"
    "    if True else None  # noqa: DTL201\n"
    'note = ("""a\n'
    '""", torch.cuda.amp.GradScaler(), """b\n'
    '""")  # noqa: DTL201\n'
    "kept = torch.cuda.amp.GradScaler() \\\n"
    "    if True else None  # noqa: E501\n"
)


def test_noqa_ending_a_continued_line_suppresses_in_cli_and_flake8(tmp_path):
    write(tmp_path, {"a.py": CONTINUED})
    cli = run_cli("check", "--no-cache", "--format", "json", "a.py", cwd=tmp_path)
    assert codes(cli) == [("a.py", 7, "DTL201")]
    assert flake8_codes("a.py", cwd=tmp_path) == codes(cli)


# -- item 5: file-level exemptions, the CLI and flake8 alike --------------------------------------
def test_file_level_exemptions_agree_with_flake8(tmp_path):
    write(tmp_path, {
        "all_codes.py": "# dtype-lint: noqa\n" + FOUR,
        "one_code.py": "# dtype-lint: noqa: DTL201, DTL4\n" + FOUR,
        "flake8_file.py": FOUR + "# flake8: noqa\n",
        "flake8_on_code.py": FOUR.replace("1e-8)\n", "1e-8)  # flake8: noqa\n"),  # not file-level in flake8
        "broken.py": "# flake8: noqa\ndef f(:\n",
    })
    cli = run_cli("check", "--no-cache", "--no-project", "--format", "json", ".", cwd=tmp_path)
    expected = [
        ("flake8_on_code.py", 2, "DTL201"), ("flake8_on_code.py", 3, "DTL302"),
        ("flake8_on_code.py", 3, "DTL401"), ("flake8_on_code.py", 4, "DTL404"),
        ("one_code.py", 4, "DTL302"),
    ]
    assert codes(cli) == expected
    assert flake8_codes(".", cwd=tmp_path) == expected
    # flake8's --disable-noqa turns its own file-level comment off, not dtype-lint's.
    plain = flake8_codes("--disable-noqa", "all_codes.py", "flake8_file.py", cwd=tmp_path)
    assert {path for path, _, _ in plain} == {"flake8_file.py"}


# -- item 8: --statistics is a table whatever the findings' format --------------------------------
@pytest.mark.parametrize("output_format", ["github", "sarif", "rdjson", "junit", "gitlab"])
def test_statistics_print_the_table_in_every_non_json_format(tmp_path, output_format):
    write(tmp_path, {"a.py": FOUR})
    table = run_cli("check", "--no-cache", "--target-torch", "2.4", "--statistics", "a.py", cwd=tmp_path)
    other = run_cli("check", "--no-cache", "--target-torch", "2.4", "--statistics", "--format", output_format, "a.py",
                    cwd=tmp_path)
    assert other.returncode == table.returncode == 1
    assert other.stdout == table.stdout and "\tDTL201\t[*] deprecated-amp-api" in other.stdout


# -- item 10: counts read as English ---------------------------------------------------------------
def test_plurals():
    from dtype_lint.wording import plural, verb

    assert [plural(1, "more fix"), plural(2, "more fix"), plural(2, "baseline entry"), plural(0, "file")] == [
        "1 more fix", "2 more fixes", "2 baseline entries", "0 files"]
    assert verb(1, "matches", "match") == "matches"


def test_fix_counts_unsafe_fixes_left_in_english(tmp_path):
    source = (FIXTURES / "fixes" / "DTL305.py").read_text()
    write(tmp_path, {"a.py": source, "b.py": source})
    result = run_cli("fix", "--select", "DTL305", ".", cwd=tmp_path)
    assert "(2 more fixes available with `dtype-lint fix --unsafe-fixes`.)" in result.stdout


# -- item 17: what ruff users reach for --------------------------------------------------------------
def test_exclude_and_per_file_ignores_on_the_command_line(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.dtype-lint]\nexclude = ["gen"]\nper-file-ignores = { "tests/*" = ["DTL201"] }\n',
        "gen/a.py": DEFECT, "tests/t.py": DEFECT, "src/s.py": FOUR, "src/legacy.py": DEFECT,
    })
    default = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert {path for path, _, _ in codes(default)} == {"src/s.py", "src/legacy.py"}
    # --exclude replaces `exclude`, --per-file-ignores replaces `per-file-ignores` (ruff's and flake8's spelling)
    replaced = run_cli("check", "--no-cache", "--format", "json", "--exclude", "src/legacy.py",
                       "--per-file-ignores", "src/*:DTL4,DTL302 src/s.py:DTL401", ".", cwd=tmp_path)
    assert codes(replaced) == [("gen/a.py", 2, "DTL201"), ("src/s.py", 2, "DTL201"), ("tests/t.py", 2, "DTL201")]
    extended = run_cli("check", "--no-cache", "--format", "json", "--extend-per-file-ignores", "src/*:DTL2",
                       "--select", "DTL2", ".", cwd=tmp_path)
    assert codes(extended) == []
    bad = run_cli("check", "--per-file-ignores", "DTL201", ".", cwd=tmp_path)
    assert bad.returncode == 2 and "expected PATTERN:CODES" in bad.stderr


def test_output_file_gets_what_stdout_would(tmp_path):
    write(tmp_path, {"a.py": DEFECT})
    result = run_cli("check", "--no-cache", "--format", "json", "-o", "reports/out.json", "a.py", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert codes(subprocess.CompletedProcess([], 0, (tmp_path / "reports" / "out.json").read_text())) == [
        ("a.py", 2, "DTL201")]
    unwritable = run_cli("check", "--output-file", "a.py/out.txt", "a.py", cwd=tmp_path)
    assert unwritable.returncode == 2 and unwritable.stderr.startswith("dtype-lint: error: cannot write a.py/out.txt")


def _line_within(stream, seconds: float) -> str:
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        assert selector.select(timeout=seconds), "no output in time"
    return stream.readline()


def test_watch_checks_again_when_a_file_changes(tmp_path):
    path = write(tmp_path, {"a.py": "x = 1\n"}) / "a.py"
    process = subprocess.Popen([sys.executable, "-m", "dtype_lint", "check", "--no-cache", "--watch",
                                "--format", "concise", "."], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        first = _line_within(process.stdout, 60)
        assert first == "All checks passed!\n"
        time.sleep(0.2)
        path.write_text(DEFECT)
        second = _line_within(process.stdout, 60)
        assert second.startswith("a.py:2:10: DTL201")
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and "Traceback" not in err
    assert "File change detected" in err
    refused = run_cli("check", "--watch", "--add-noqa", ".", cwd=tmp_path)
    assert refused.returncode == 2


def test_standalone_config_and_extend(tmp_path):
    write(tmp_path, {
        "shared/base.toml": 'ignore = ["DTL4"]\nper-file-ignores = { "legacy.py" = ["DTL201"] }\n',
        "project/dtype-lint.toml": 'extend = "../shared/base.toml"\nextend-select = ["DTL002"]\n',
        # ruff's precedence: a dtype-lint.toml wins over the pyproject.toml beside it
        "project/pyproject.toml": '[tool.dtype-lint]\nselect = ["DTL1"]\n',
        "project/a.py": FOUR + "x = 1  # noqa: DTL203\n",
        "project/legacy.py": DEFECT,
        "project/sub/.dtype-lint.toml": 'select = ["DTL201"]\n',
        "project/sub/b.py": FOUR,
    })
    result = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path / "project")
    assert codes(result) == [
        ("a.py", 2, "DTL201"), ("a.py", 3, "DTL302"), ("a.py", 5, "DTL002"),  # DTL4 ignored by the base
        ("sub/b.py", 2, "DTL201"),
    ]
    (tmp_path / "shared" / "base.toml").write_text('extend = "../project/dtype-lint.toml"\n')
    cycle = run_cli("check", ".", cwd=tmp_path / "project")
    assert cycle.returncode == 2 and "makes a cycle" in cycle.stderr and cycle.stderr.count("\n") == 1


# -- DTL002: unused-noqa (ruff's RUF100), opt-in ------------------------------------------------------
UNUSED = (
    "import torch\n"
    "scaler = torch.cuda.amp.GradScaler()  # noqa: DTL201\n"
    "x = 1  # noqa: DTL201, E501\n"
    "y = 2  # noqa: DTL291\n"
    "z = 3  # dtype-lint: ignore[DTL301]\n"
    "w = 4  # noqa\n"
    "v = 5  # noqa: DTL201 because the tool once said so\n"
    'doc = """write `# noqa: DTL201` to silence it"""\n'  # not a comment: not judged
)


def test_unused_noqa_is_opt_in_and_its_fix_is_unsafe(tmp_path):
    path = write(tmp_path, {"a.py": UNUSED}) / "a.py"
    assert run_cli("check", "--no-cache", "a.py", cwd=tmp_path).returncode == 0
    found = run_cli("check", "--no-cache", "--extend-select", "DTL002", "--format", "concise", "a.py", cwd=tmp_path)
    assert concise(found) == [
        "a.py:3:8: DTL002 Unused `noqa` directive (unused: `DTL201`)",
        "a.py:4:8: DTL002 Unused `noqa` directive (unknown: `DTL291`)",
        "a.py:5:8: DTL002 Unused `dtype-lint: ignore` directive (unused: `DTL301`)",
        "a.py:7:8: DTL002 Unused `noqa` directive (unused: `DTL201`)",
    ]
    # Only the rules that ran judge their codes: with DTL3 off, DTL301's comment is not called unused.
    narrow = run_cli("check", "--no-cache", "--select", "DTL2,DTL002", "--format", "json", "a.py", cwd=tmp_path)
    assert [line for _, line, _ in codes(narrow)] == [3, 4, 7]
    fixed = run_cli("fix", "--no-cache", "--extend-select", "DTL002", "--unsafe-fixes", "a.py", cwd=tmp_path)
    assert fixed.returncode == 1, fixed.stdout  # line 7's words after the codes: no fix, reported
    assert path.read_text().splitlines()[2:5] == ["x = 1  # noqa: E501", "y = 2", "z = 3"]


def test_unused_noqa_counts_comments_the_project_pass_uses(tmp_path):
    # The fp16 world comes from train.py: model.py's finding exists only in the whole-program pass.
    write(tmp_path, {
        "model.py": textwrap.dedent("""\
            import torch


            class Net(torch.nn.Module):
                def forward(self, x):
                    return x.masked_fill(x > 0, -1e9)  # noqa: DTL501
            """),
        "train.py": "import torch\nfrom model import Net\n\nnet = Net().half()\nnet(torch.zeros(2, dtype=torch.float16))\n",
    })
    project = run_cli("check", "--no-cache", "--select", "DTL,DTL002", "--format", "json", ".", cwd=tmp_path)
    alone = run_cli("check", "--no-cache", "--no-project", "--select", "DTL,DTL002", "--format", "json", ".",
                    cwd=tmp_path)
    without = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    (tmp_path / "model.py").write_text((tmp_path / "model.py").read_text().replace("  # noqa: DTL501", ""))
    reported = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert ("model.py", 6, "DTL501") in codes(reported), reported.stdout  # the comment is used...
    assert codes(without) == [] and codes(project) == []  # ...so it is not unused
    assert codes(alone) == [("model.py", 6, "DTL002")]  # file by file it is


# -- --output-format values ruff users know ----------------------------------------------------------
def test_output_formats_full_json_lines_junit_gitlab(tmp_path):
    write(tmp_path, {"a.py": FOUR, "nb/clean.py": "x = 1\n"})
    full = run_cli("check", "--no-cache", "--output-format", "full", "a.py", cwd=tmp_path)
    text = run_cli("check", "--no-cache", "a.py", cwd=tmp_path)
    assert full.stdout == text.stdout
    as_json = json.loads(run_cli("check", "--no-cache", "--format", "json", "a.py", cwd=tmp_path).stdout)
    lines = run_cli("check", "--no-cache", "--output-format", "json-lines", "a.py", cwd=tmp_path).stdout
    assert [json.loads(line) for line in lines.splitlines()] == as_json
    junit = ElementTree.fromstring(run_cli("check", "--no-cache", "--output-format", "junit", "a.py",
                                           cwd=tmp_path).stdout)
    assert junit.tag == "testsuites" and junit.get("failures") == "4"
    (suite,) = junit
    assert suite.get("name") == "a.py" and [case.get("name") for case in suite] == [
        f"dtype-lint.{code}" for code in ("DTL201", "DTL302", "DTL401", "DTL404")]
    assert suite[0].get("line") == "2" and suite[0][0].tag == "failure"
    passing = ElementTree.fromstring(run_cli("check", "--no-cache", "--format", "junit", "nb", cwd=tmp_path).stdout)
    assert passing.get("failures") == "0" and passing[0][0].get("name") == "No errors found"
    gitlab = json.loads(run_cli("check", "--no-cache", "--format", "gitlab", "a.py", cwd=tmp_path,
                                env={"CI_PROJECT_DIR": str(tmp_path)}).stdout)
    for issue in gitlab:  # GitLab Code Quality's required fields
        assert set(issue) == {"check_name", "description", "severity", "fingerprint", "location"}
        assert issue["location"]["path"] == "a.py" and issue["location"]["positions"]["begin"]["line"] >= 2
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
    assert len({issue["fingerprint"] for issue in gitlab}) == 4
    moved = (tmp_path / "a.py").read_text().replace("import torch\n", "import torch\n\n\n")
    (tmp_path / "a.py").write_text(moved)
    again = json.loads(run_cli("check", "--no-cache", "--format", "gitlab", "a.py", cwd=tmp_path).stdout)
    assert [i["fingerprint"] for i in again] == [i["fingerprint"] for i in gitlab]  # lines moved: same issues
    config = run_cli("check", "--config", str(write(tmp_path, {"c.toml": 'output-format = "full"\n'}) / "c.toml"),
                     "a.py", cwd=tmp_path)
    assert config.returncode == 1 and "Found 4 errors." in config.stdout


# -- items 11 and 12: confirm's errors ---------------------------------------------------------------
def test_confirm_without_torch_is_a_one_line_install_hint(tmp_path):
    # An environment without torch: the wrapper hides it from this interpreter, which runs the program.
    wrapper = write(tmp_path, {
        "no_torch.py": "import sys\nsys.modules['torch'] = None\nfrom dtype_lint.cli import main\nsys.exit(main())\n",
        "train.py": "import torch\nprint('ran')\n",
    }) / "no_torch.py"
    result = subprocess.run([sys.executable, str(wrapper), "confirm", "train.py"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (f"dtype-lint: error: confirm runs the program with torch, which {sys.executable} "
                             "cannot import: pip install 'dtype-lint[runtime]'\n")

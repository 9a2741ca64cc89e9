"""ruff's everyday flags on ``check``/``fix`` and the defects a new user met (issue 12).

Every test runs the real CLI in a subprocess on a small project written to a temporary directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import run_cli

DEFECT = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"


def write(root, files: dict[str, str]):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


# A project on torch >= 2.4, where DTL201's replacements exist: its fixes are safe (issue 21).
TORCH_2_4 = "torch>=2.4\n"


def found(result) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["code"]) for f in json.loads(result.stdout)]


# -- defect 1: no argparse abbreviations ---------------------------------------------------------
@pytest.mark.parametrize("option", [["--diff-b", "HEAD"], ["--sel", "DTL2"], ["--no-c"], ["--stat"]])
def test_abbreviated_options_are_refused(tmp_path, option):
    write(tmp_path, {"a.py": DEFECT})
    result = run_cli("check", *option, "a.py", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("dtype-lint: error: unrecognized arguments:")
    assert result.stdout == ""


# -- defect 3 and selection by name ---------------------------------------------------------------
@pytest.mark.parametrize("selector", ["DTL999", "DTL9", "", ",", "no-such-rule"])
def test_a_selector_naming_no_rule_is_a_usage_error(tmp_path, selector):
    write(tmp_path, {"a.py": DEFECT})
    result = run_cli("check", "--select", selector, "a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and "--select" in result.stderr
    assert "All checks passed" not in result.stdout


def test_an_unknown_code_in_the_config_is_a_usage_error(tmp_path):
    write(tmp_path, {"a.py": DEFECT, "pyproject.toml": '[tool.dtype-lint]\nignore = ["DTL999"]\n'})
    result = run_cli("check", "a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "'ignore'" in result.stderr and "DTL999" in result.stderr and len(result.stderr.splitlines()) == 1


def test_rules_are_selected_by_name_as_by_code(tmp_path):
    write(tmp_path, {"a.py": DEFECT + "torch.backends.cudnn.allow_tf32 = True\n"})
    by_name = run_cli("check", "--format", "json", "--select", "deprecated-amp-api", "a.py", cwd=tmp_path)
    by_code = run_cli("check", "--format", "json", "--select", "DTL201", "a.py", cwd=tmp_path)
    assert found(by_name) == found(by_code) == [("a.py", 2, "DTL201")]
    ignored = run_cli("check", "--format", "json", "--ignore", "tf32-legacy-flags,DTL201", "a.py", cwd=tmp_path)
    assert ignored.returncode == 0 and found(ignored) == []


def test_a_directory_without_python_files_warns(tmp_path):
    write(tmp_path, {"docs/readme.md": "# nothing to check\n"})
    result = run_cli("check", "docs", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr == "dtype-lint: warning: no Python files found under docs\n"
    assert "All checks passed" not in result.stdout


# -- defect 4: hierarchical configuration ---------------------------------------------------------
@pytest.fixture(scope="module")
def monorepo(tmp_path_factory):
    """Root config excludes ``legacy``; ``a`` ignores DTL201 and ``a/deep`` re-enables only DTL2."""
    root = tmp_path_factory.mktemp("monorepo")
    return write(root, {
        "pyproject.toml": '[tool.dtype-lint]\nexclude = ["legacy"]\n',
        "a/pyproject.toml": '[tool.dtype-lint]\nignore = ["DTL201"]\n',
        "a/deep/pyproject.toml": '[tool.dtype-lint]\nselect = ["DTL2"]\n',
        "a/x.py": DEFECT,
        "a/deep/y.py": DEFECT + "torch.backends.cudnn.allow_tf32 = True\n",
        "b/x.py": DEFECT,
        "legacy/old.py": DEFECT,
        "b/build/gen.py": DEFECT,
    })


def test_each_file_takes_the_nearest_config_whatever_the_order(monorepo):
    orders = [["a", "b"], ["b", "a"], ["b", "a/x.py", "a/deep"], ["."]]
    results = [run_cli("check", "--no-cache", "--format", "json", *paths, cwd=monorepo) for paths in orders]
    expected = [("a/deep/y.py", 2, "DTL201"), ("b/x.py", 2, "DTL201")]
    for paths, result in zip(orders, results):
        assert sorted(found(result)) == expected, paths


def test_cache_keeps_each_configs_results_apart(monorepo, tmp_path):
    env = {"DTYPE_LINT_CACHE_DIR": str(tmp_path / "cache")}
    first = run_cli("check", "--format", "json", "a", "b", cwd=monorepo, env=env)
    second = run_cli("check", "--format", "json", "b", "a", cwd=monorepo, env=env)
    assert sorted(found(first)) == sorted(found(second)) == [("a/deep/y.py", 2, "DTL201"), ("b/x.py", 2, "DTL201")]


def test_show_settings_and_show_files(monorepo):
    settings = run_cli("check", "--show-settings", "a/deep/y.py", cwd=monorepo)
    assert settings.returncode == 0
    assert f"# config: {monorepo / 'a' / 'deep' / 'pyproject.toml'}" in settings.stdout
    assert 'select = ["DTL2"]' in settings.stdout and "force-exclude = false" in settings.stdout
    files = run_cli("check", "--show-files", ".", cwd=monorepo)
    assert files.returncode == 0
    assert files.stdout.splitlines() == ["a/deep/y.py", "a/x.py", "b/x.py"]


def test_verbose_names_the_configs_and_quiet_drops_the_summary(monorepo):
    verbose = run_cli("check", "--no-cache", "-v", "b", "a", cwd=monorepo)
    assert f"1 file with {monorepo / 'a' / 'pyproject.toml'}" in verbose.stderr
    assert "1 file with (no config" not in verbose.stderr  # b/ takes the root's config
    assert f"1 file with {monorepo / 'pyproject.toml'}" in verbose.stderr
    quiet = run_cli("check", "--no-cache", "-q", "b", cwd=monorepo)
    assert quiet.returncode == 1 and "b/x.py:2:10: DTL201" in quiet.stdout and "Found" not in quiet.stdout
    silent = run_cli("check", "--no-cache", "-qq", "b", cwd=monorepo)
    assert silent.returncode == 1 and silent.stdout == "" and silent.stderr == ""
    fixing = run_cli("fix", "--diff", "-v", "a", cwd=monorepo)
    assert f"1 file with {monorepo / 'a' / 'deep' / 'pyproject.toml'}" in fixing.stderr
    both = run_cli("check", "-q", "-v", "b", cwd=monorepo)
    assert both.returncode == 2


# -- defect 2: exclude for named files (--force-exclude), --extend-exclude ------------------------
def test_force_exclude_applies_excludes_to_named_files(monorepo):
    named = ["legacy/old.py", "b/build/gen.py", "b/x.py"]
    as_named = run_cli("check", "--format", "json", *named, cwd=monorepo)
    assert found(as_named) == [("b/build/gen.py", 2, "DTL201"), ("b/x.py", 2, "DTL201"), ("legacy/old.py", 2, "DTL201")]
    # An exclude pattern and a folder a walk skips (build output) drop a named file too.
    forced = run_cli("check", "--format", "json", "--force-exclude", *named, cwd=monorepo)
    assert found(forced) == [("b/x.py", 2, "DTL201")]
    extended = run_cli("check", "--format", "json", "--extend-exclude", "b,nothing", ".", cwd=monorepo)
    assert found(extended) == [("a/deep/y.py", 2, "DTL201")]


def test_force_exclude_from_the_config_and_turned_off_on_the_command_line(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.dtype-lint]\nextend-exclude = ["gen_*.py"]\nforce-exclude = true\n',
        "gen_model.py": DEFECT,
    })
    assert run_cli("check", "gen_model.py", cwd=tmp_path).returncode == 0
    assert run_cli("check", "--no-force-exclude", "gen_model.py", cwd=tmp_path).returncode == 1


# -- defect 5: unreadable directories and FIFOs ---------------------------------------------------
def _as_unprivileged(argv: list[str]) -> list[str]:
    """root reads anything: in a user namespace of its own it is held to the permission bits."""
    if os.getuid() != 0:
        return argv
    unshare = shutil.which("unshare")
    assert unshare, "running as root: `unshare --user` is needed to make a directory unreadable"
    return [unshare, "--user", *argv]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_unreadable_directory_file_and_fifo_are_dtl001_each_and_the_rest_is_checked(tmp_path):
    # One semantics for every path that cannot be read (issue 22, item 7): a DTL001 finding each
    # (ruff's and flake8's E902), exit 1, the other files checked; a FIFO never blocks the run.
    write(tmp_path, {"ok/a.py": DEFECT, "locked/b.py": DEFECT, "ok/secret.py": DEFECT})
    os.mkfifo(tmp_path / "ok" / "pipe.py")
    (tmp_path / "locked").chmod(0)
    (tmp_path / "ok" / "secret.py").chmod(0)
    try:
        argv = _as_unprivileged([sys.executable, "-m", "dtype_lint", "check", "--no-cache", "--format", "concise", "."])
        result = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        alone = subprocess.run(argv[:-1] + ["locked"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        named = subprocess.run(argv[:-1] + ["ok/pipe.py", "ok/a.py"], cwd=tmp_path, capture_output=True, text=True,
                               timeout=60)
    finally:
        (tmp_path / "locked").chmod(0o755)
        (tmp_path / "ok" / "secret.py").chmod(0o644)
    assert result.returncode == 1 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert "locked:1:1: DTL001 Cannot check this directory: cannot read: Permission denied" in lines
    assert "ok/pipe.py:1:1: DTL001 Cannot check this file: not a regular file" in lines
    assert "ok/secret.py:1:1: DTL001 Cannot check this file: cannot read: Permission denied" in lines
    assert any(line.startswith("ok/a.py:2:10: DTL201") for line in lines)
    assert alone.returncode == 1 and alone.stderr == ""
    assert alone.stdout.startswith("locked:1:1: DTL001 Cannot check this directory: cannot read: Permission denied\n")
    assert named.returncode == 1 and "ok/pipe.py:1:1: DTL001" in named.stdout and "ok/a.py:2:10: DTL201" in named.stdout


# -- --statistics ---------------------------------------------------------------------------------
STATS_SOURCE = """\
import torch
scaler = torch.cuda.amp.GradScaler()
other = torch.cuda.amp.GradScaler()
model = torch.nn.Linear(2, 2).half()
optimizer = torch.optim.Adam(model.parameters(), eps=1e-8)
x = torch.zeros(3, dtype=torch.float16)
y = x.numpy()
"""


def test_statistics_count_per_code_with_fixability(tmp_path):
    write(tmp_path, {"a.py": STATS_SOURCE, "requirements.txt": TORCH_2_4})
    listed = run_cli("check", "--no-cache", "--format", "json", "a.py", cwd=tmp_path)
    counts: dict[str, int] = {}
    for finding in json.loads(listed.stdout):
        counts[finding["code"]] = counts.get(finding["code"], 0) + 1
    assert counts["DTL201"] == 2
    text = run_cli("check", "--no-cache", "--statistics", "a.py", cwd=tmp_path)
    assert text.returncode == 1
    rows = [line.split("\t") for line in text.stdout.splitlines()]
    assert {code: int(count) for count, code, _ in rows} == counts
    assert rows[0] == ["2", "DTL201", "[*] deprecated-amp-api"]  # most frequent first
    as_json = run_cli("check", "--no-cache", "--statistics", "--format", "json", "a.py", cwd=tmp_path)
    data = {row["code"]: row for row in json.loads(as_json.stdout)}
    assert data["DTL201"] == {"code": "DTL201", "name": "deprecated-amp-api", "count": 2, "fixable": 2, "unsafe_fixable": 0}
    assert {code: row["count"] for code, row in data.items()} == counts


# -- --add-noqa -----------------------------------------------------------------------------------
NOQA_SOURCE = '''\
import torch
scaler = torch.cuda.amp.GradScaler()  # noqa: E501
help_text = """
torch.backends.cudnn.allow_tf32 = True
"""
torch.backends.cudnn.allow_tf32 = \\
    True
settings = dict(
    scaler=torch.cuda.amp.GradScaler(),
    note="""multi
line""", other=torch.cuda.amp.GradScaler(
    ),
)
'''


def test_add_noqa_suppresses_keeps_codes_and_is_idempotent(tmp_path):
    # torch >= 2.9: DTL701's fp32_precision advice applies (issue 21).
    path = write(tmp_path, {"a.py": NOQA_SOURCE, "requirements.txt": "torch>=2.9\n"}) / "a.py"
    before = run_cli("check", "--no-cache", "--format", "json", "a.py", cwd=tmp_path)
    assert len(json.loads(before.stdout)) == 4
    added = run_cli("check", "--no-cache", "--add-noqa", "a.py", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert added.stdout == "Added 4 noqa directives.\n" and added.stderr == ""
    text = path.read_text()
    compile(text, "a.py", "exec")  # nothing written into a string or after a backslash
    lines = text.splitlines()
    assert lines[1] == "scaler = torch.cuda.amp.GradScaler()  # noqa: E501, DTL201"
    assert lines[3] == "torch.backends.cudnn.allow_tf32 = True"  # inside a string: untouched
    # The statement continued by a backslash: at the end of its last line, where flake8 reads it too.
    assert lines[5:7] == ["torch.backends.cudnn.allow_tf32 = \\", "    True  # noqa: DTL701"]
    assert lines[8] == "    scaler=torch.cuda.amp.GradScaler(),  # noqa: DTL201"
    assert lines[10] == 'line""", other=torch.cuda.amp.GradScaler(  # noqa: DTL201'
    after = run_cli("check", "--no-cache", "--format", "json", "a.py", cwd=tmp_path)
    assert found(after) == [] and after.returncode == 0
    again = run_cli("check", "--no-cache", "--add-noqa", "a.py", cwd=tmp_path)
    assert again.stdout == "Added 0 noqa directives.\n" and path.read_text() == text


def test_add_noqa_between_strings_goes_where_the_strings_end(tmp_path):
    # The statement starts and the finding sits on lines that both end inside a string: the
    # directive goes on the last line of the strings' run, where flake8 and the CLI read it.
    source = 'import torch\nx = ("""a\n""", torch.cuda.amp.GradScaler(), """b\n""")\n'
    path = write(tmp_path, {"a.py": source}) / "a.py"
    result = run_cli("check", "--no-cache", "--add-noqa", "a.py", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "Added 1 noqa directive.\n", "")
    assert path.read_text() == source.replace('"""b\n""")', '"""b\n""")  # noqa: DTL201')
    assert run_cli("check", "--no-cache", "a.py", cwd=tmp_path).returncode == 0


# -- check --fix / --unsafe-fixes / --diff are `fix` ----------------------------------------------
def test_check_fix_flags_are_the_fix_command(tmp_path):
    source = DEFECT + "model = torch.nn.Linear(2, 2).half()\ny = model(torch.randn(1, 2))\n"
    for flags in (["--diff"], ["--fix", "--unsafe-fixes"], ["--fix", "--exit-non-zero-on-fix"]):
        pair = []
        for command in (["check", *flags], ["fix", *[f for f in flags if f != "--fix"]]):
            write(tmp_path, {"a.py": source, "requirements.txt": TORCH_2_4})
            result = run_cli(*command, "--no-cache", "a.py", cwd=tmp_path)
            pair.append((result.returncode, result.stdout, result.stderr, (tmp_path / "a.py").read_text()))
        assert pair[0] == pair[1], flags
    assert pair[0][3] != source  # the last pair wrote the fix


# -- defect 7: fix --diff reports the file as it is ------------------------------------------------
def test_fix_diff_reports_remaining_findings_at_unfixed_lines(tmp_path):
    # The DTL201 fix drops line 1 (the import it leaves unused); the DTL404 finding stays on line 5.
    source = (
        "from torch.cuda.amp import GradScaler\n"
        "import torch\n"
        "scaler = GradScaler()\n"
        "model = torch.nn.Linear(2, 2).half()\n"
        "optimizer = torch.optim.Adam(model.parameters(), eps=1e-8)\n"
    )
    write(tmp_path, {"a.py": source, "requirements.txt": TORCH_2_4})
    checked = found(run_cli("check", "--no-cache", "--format", "json", "a.py", cwd=tmp_path))
    remaining = [item for item in checked if item[2] != "DTL201"]
    assert remaining and all(line >= 4 for _, line, _ in remaining)
    diff = run_cli("fix", "--no-cache", "--diff", "a.py", cwd=tmp_path)
    assert diff.returncode == 1 and diff.stdout.startswith("--- a/a.py")
    for path, line, code in remaining:
        assert f"{path}:{line}:" in diff.stderr and code in diff.stderr
    applied = run_cli("fix", "--no-cache", "a.py", cwd=tmp_path)  # written: lines are the new file's
    for path, line, code in remaining:
        assert f"{path}:{line - 1}:" in applied.stdout
    # A notebook holding the same code: its cell lines as they are, too.
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
    (tmp_path / "a.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    diff = run_cli("fix", "--no-cache", "--diff", "a.ipynb", cwd=tmp_path)
    assert diff.returncode == 1
    for _, line, code in remaining:
        assert f"a.ipynb:cell 1:{line}:" in diff.stderr and code in diff.stderr


# -- defect 8: DTL201's fix leaves no unused import (real flake8) ----------------------------------
def test_dtl201_fix_drops_the_imports_it_orphaned(tmp_path):
    write(tmp_path, {"requirements.txt": TORCH_2_4, "a.py": """\
        import torch
        from torch.cuda.amp import GradScaler, autocast
        from torch.cuda.amp import custom_fwd  # noqa: F401 - re-exported
        from torch.cuda.amp import (
            GradScaler as GS,
            custom_bwd,
        )
        __all__ = ["custom_bwd"]
        scaler = GradScaler()
        other = GS()
        with autocast():
            pass
        """})
    result = run_cli("fix", "--no-cache", "a.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    text = (tmp_path / "a.py").read_text()
    assert "from torch.cuda.amp import GradScaler, autocast" not in text
    assert "from torch.cuda.amp import custom_fwd  # noqa: F401" in text  # a wanted import stays
    assert "from torch.cuda.amp import (\n    custom_bwd,\n)\n" in text
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "F401,F811,F821", "a.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert flake8.returncode == 0, flake8.stdout + flake8.stderr
    assert run_cli("fix", "--no-cache", "a.py", cwd=tmp_path).stdout.startswith("Fixed 0 errors")


# -- --target-torch gates DTL701's fix ------------------------------------------------------------
def test_target_torch_gates_the_tf32_finding_and_fix(tmp_path):
    """DTL701 advises fp32_precision (torch 2.9) only to a project whose oldest torch has it:
    read from its dependencies, overridden by the config file, which the flag overrides."""
    write(tmp_path, {"a.py": "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n"})

    def findings_of(*flags):
        result = run_cli("check", "--no-cache", "--format", "json", *flags, "a.py", cwd=tmp_path)
        return [(f["code"], f["fix"] is not None) for f in json.loads(result.stdout)]

    assert findings_of() == []  # no torch bound declared: nothing the project can act on
    assert findings_of("--target-torch", "2.9") == [("DTL701", True)]
    assert findings_of("--target-torch", "2.4") == []
    (tmp_path / "requirements.txt").write_text("torch>=2.9.1\n")
    assert findings_of() == [("DTL701", True)]
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\ntarget-torch = "2.8"\n')
    assert findings_of() == []  # the config overrides the declaration
    assert findings_of("--target-torch", "2.10") == [("DTL701", True)]  # the flag overrides the file
    bad = run_cli("check", "--target-torch", "latest", "a.py", cwd=tmp_path)
    assert bad.returncode == 2 and "--target-torch" in bad.stderr


# -- defect 6: notebooks cite cell:line; SARIF opens the notebook at the code ---------------------
def _training_notebook(path):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# training\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": [
            "import torch\n", "model = torch.nn.Linear(4, 4).cuda()\n",
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n", "scaler = torch.amp.GradScaler('cuda')\n",
        ]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": [
            "for x in range(3):\n", "    with torch.autocast('cuda', dtype=torch.float16):\n",
            "        loss = model(torch.randn(2, 4, device='cuda')).sum()\n",
            "    scaler.scale(loss).backward()\n", "    opt.step()\n", "    scaler.update()\n",
        ]},
    ]
    notebook = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook, indent=1))
    return path


def test_notebook_messages_cite_cells_and_sarif_points_into_the_json(tmp_path):
    _training_notebook(tmp_path / "train.ipynb")
    listed = json.loads(run_cli("check", "--no-cache", "--format", "json", "train.ipynb", cwd=tmp_path).stdout)
    (dtl305,) = [f for f in listed if f["code"] == "DTL305"]
    assert (dtl305["cell"], dtl305["line"]) == (3, 5)
    assert "GradScaler cell 2:4" in dtl305["message"] and "backward on cell 3:4" in dtl305["message"]
    assert "line" not in dtl305["message"]
    sarif = json.loads(run_cli("check", "--no-cache", "--format", "sarif", "train.ipynb", cwd=tmp_path).stdout)
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "DTL305"]
    region = result["locations"][0]["physicalLocation"]["region"]
    json_lines = (tmp_path / "train.ipynb").read_text().splitlines()
    assert json_lines[region["startLine"] - 1].strip() == '"    opt.step()\\n",'
    assert region["properties"] == {"cell": 3, "line": 5, "column": 5}


def test_add_noqa_writes_into_notebook_cells(tmp_path):
    path = _training_notebook(tmp_path / "train.ipynb")
    before = path.read_text()
    added = run_cli("check", "--no-cache", "--add-noqa", "train.ipynb", cwd=tmp_path)
    assert added.stdout == "Added 1 noqa directive.\n", added.stderr
    after = path.read_text()
    changed = [(old, new) for old, new in zip(before.splitlines(), after.splitlines()) if old != new]
    assert changed == [('    "    opt.step()\\n",', '    "    opt.step()  # noqa: DTL305\\n",')]
    assert run_cli("check", "--no-cache", "train.ipynb", cwd=tmp_path).returncode == 0

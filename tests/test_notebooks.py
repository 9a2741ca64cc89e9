"""Jupyter notebooks: checked as one program, findings at (cell, line), fixes written back."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dtype_lint.config import Settings
from dtype_lint.notebook import check_notebook, is_ipython_line, load_program
from tests.conftest import run_cli

# The features under test, not the rule catalogue: other rules (DTL307, ...) rightly fire on
# these snippets too, and their findings are not what these tests are about.
ONLY = ("--select", "DTL001,DTL201")


def cell(source, kind: str = "code", **extra) -> dict:
    data = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        data.update({"execution_count": None, "outputs": []})
    data.update(extra)
    return data


def notebook(*cells: dict, metadata: dict | None = None, indent: int = 1) -> str:
    document = {"cells": list(cells), "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=indent, ensure_ascii=False) + "\n"


def lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def check(tmp_path: Path, name: str, content: str, *args: str):
    (tmp_path / name).write_text(content, encoding="utf-8")
    return run_cli("check", *ONLY, "--no-cache", *args, name, cwd=tmp_path)


def json_findings(tmp_path: Path, name: str, content: str) -> list[tuple]:
    result = check(tmp_path, name, content, "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    return [(f["code"], f.get("cell"), f["line"], f["column"]) for f in json.loads(result.stdout)]


OUTPUT = {"output_type": "stream", "name": "stdout", "text": ["step 1 loss 0.25\n"]}


def test_findings_point_at_cell_and_line(tmp_path):
    content = notebook(
        cell(["# Training\n"], kind="markdown"),
        cell(["import torch\n"]),
        cell(["model = torch.nn.Linear(4, 4)\n", "scaler = torch.cuda.amp.GradScaler()"], outputs=[OUTPUT]),
    )
    (tmp_path / "requirements.txt").write_text("torch>=2.4\n")  # the replacement exists (issue 21)
    result = check(tmp_path, "train.ipynb", content)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == (
        'train.ipynb:cell 3:2:10: DTL201 [*] `torch.cuda.amp.GradScaler` is deprecated; use `torch.amp.GradScaler("cuda", ...)`'
    )
    assert json_findings(tmp_path, "train.ipynb", content) == [("DTL201", 3, 2, 10)]


def test_cells_are_one_program(tmp_path):
    # The alias is imported in cell 1 and used two cells later: only the whole program shows
    # that `amp` is torch.cuda.amp.
    content = notebook(
        cell("from torch.cuda import amp\nimport torch"),
        cell("batch = 8"),
        cell("scaler = amp.GradScaler()"),
    )
    assert json_findings(tmp_path, "nb.ipynb", content) == [("DTL201", 3, 1, 10)]
    alone = notebook(cell("scaler = amp.GradScaler()"))
    assert json_findings(tmp_path, "alone.ipynb", alone) == []


def test_ipython_syntax_is_skipped_safely(tmp_path):
    content = notebook(
        cell(["%matplotlib inline\n", "!pip install -q accelerate\n", "import torch\n", "torch.nn.Linear?\n"]),
        cell(["%%bash\n", "  echo 'not python: torch.cuda.amp.GradScaler()'\n", "ls -la | wc -l"]),
        cell(["files = !ls *.pt\n", "for f in files:\n", "    %time torch.load(f)\n",
              "note = '''\n", "%d checkpoints?\n", "'''\n", "s = torch.cuda.amp.GradScaler()"]),
        cell(["%%time\n", "scaler = torch.cuda.amp.GradScaler()\n"]),
    )
    assert json_findings(tmp_path, "nb.ipynb", content) == [("DTL201", 3, 7, 5), ("DTL201", 4, 2, 10)]


def test_shell_command_continued_with_backslash_is_skipped(tmp_path):
    # Issue 14: `!pip install ... \` continues on indented lines, which are shell too: they used
    # to stay in the program and give a spurious DTL001 "unexpected indent".
    content = notebook(
        cell(["!pip install -q \\\n", "    accelerate \\\n", "    peft\n", "import torch\n",
              "scaler = torch.cuda.amp.GradScaler()\n", "x = (1 +\\\n", "  2)\n"]),
    )
    assert json_findings(tmp_path, "nb.ipynb", content) == [("DTL201", 1, 5, 10)]
    program = load_program(content)
    assert program.rebuild(program.text) == content


def test_ipython_line_detection():
    assert is_ipython_line("%timeit f()") and is_ipython_line("  !ls") and is_ipython_line("model.forward??")
    assert is_ipython_line("out = %time f()") and is_ipython_line("a, b = !cat x")
    assert not is_ipython_line("x = y % 3") and not is_ipython_line("print('why?')  # really?")
    assert not is_ipython_line("d['%s' % k] = 1")


def test_broken_notebooks_get_dtl001(tmp_path):
    for name, content in [
        ("truncated.ipynb", '{"cells": [\n  {"cell_type": "code",\n'),
        ("list.ipynb", "[1, 2]"),
        ("v3.ipynb", json.dumps({"worksheets": [{"cells": []}], "nbformat": 3})),
        ("numbers.ipynb", json.dumps({"cells": [{"cell_type": "code", "source": [1, 2]}]})),
    ]:
        result = check(tmp_path, name, content)
        assert result.returncode == 1, (name, result.stdout)
        assert f"{name}:" in result.stdout and "DTL001" in result.stdout, result.stdout
    result = check(tmp_path, "truncated.ipynb", '{"cells": [\n  {"cell_type": "code",\n')
    assert result.stdout.startswith("truncated.ipynb:3:1: DTL001 Cannot check this file: not valid notebook JSON")


def test_syntax_error_in_a_cell_is_reported_in_that_cell(tmp_path):
    content = notebook(cell("import torch"), cell("x = 1\ndef broken(:\n    pass"))
    findings = json_findings(tmp_path, "nb.ipynb", content)
    assert [(code, cell_no, line) for code, cell_no, line, _ in findings] == [("DTL001", 2, 2)]


def test_non_python_notebooks_are_skipped(tmp_path):
    r_kernel = {"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}}
    content = notebook(cell("scaler <- torch.cuda.amp.GradScaler()"), metadata=r_kernel)
    assert json_findings(tmp_path, "analysis.ipynb", content) == []


def test_noqa_in_a_cell(tmp_path):
    content = notebook(cell("import torch\ns = torch.cuda.amp.GradScaler()  # noqa: DTL201"))
    assert json_findings(tmp_path, "nb.ipynb", content) == []


def test_program_round_trip_is_identity():
    raw = notebook(cell(["%load_ext autoreload\n", "import torch"]), cell("x = 1\n"), cell([]), indent=2)
    program = load_program(raw)
    assert program.rebuild(program.text) == raw


def test_fix_writes_back_only_the_changed_cell(tmp_path):
    original = notebook(
        cell(["# Mixed precision\n", "Ünïcode prose.\n"], kind="markdown"),
        cell(["%load_ext autoreload\n", "import torch\n"], execution_count=1, outputs=[OUTPUT]),
        cell(["!nvidia-smi\n", "scaler = torch.cuda.amp.GradScaler()\n", "with torch.cuda.amp.autocast():\n", "    pass"],
             execution_count=2, outputs=[OUTPUT], metadata={"tags": ["train"]}),
        metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
        indent=2,  # not nbformat's own layout: it must survive untouched
    )
    path = tmp_path / "train.ipynb"
    path.write_text(original, encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("torch>=2.4\n")  # the replacements exist: safe fixes
    result = run_cli("fix", *ONLY, "--no-cache", "train.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Fixed train.ipynb: 2 × DTL201" in result.stdout
    fixed = path.read_text(encoding="utf-8")
    before, after = json.loads(original), json.loads(fixed)
    assert after["cells"][2]["source"] == [
        "!nvidia-smi\n", 'scaler = torch.amp.GradScaler("cuda")\n', 'with torch.amp.autocast("cuda"):\n', "    pass",
    ]
    after["cells"][2]["source"] = before["cells"][2]["source"]
    assert after == before  # outputs, metadata, other cells: all as they were
    changed = [(a, b) for a, b in zip(lines_of(original), lines_of(fixed)) if a != b]
    assert len(lines_of(original)) == len(lines_of(fixed)) and len(changed) == 2  # byte-for-byte elsewhere
    assert run_cli("check", *ONLY, "--no-cache", "train.ipynb", cwd=tmp_path).returncode == 0
    again = run_cli("fix", *ONLY, "--no-cache", "train.ipynb", cwd=tmp_path)
    assert again.returncode == 0 and path.read_text(encoding="utf-8") == fixed  # idempotent


def test_fix_of_a_cell_held_as_one_string_and_on_stdin(tmp_path):
    original = notebook(cell("import torch\nscaler = torch.cuda.amp.GradScaler()"))
    (tmp_path / "nb.ipynb").write_text(original)
    (tmp_path / "requirements.txt").write_text("torch>=2.4\n")  # the replacement exists: a safe fix
    run_cli("fix", *ONLY, "--no-cache", "nb.ipynb", cwd=tmp_path)
    fixed = json.loads((tmp_path / "nb.ipynb").read_text())
    assert fixed["cells"][0]["source"] == 'import torch\nscaler = torch.amp.GradScaler("cuda")'
    piped = run_cli("fix", *ONLY, "--stdin-filename", "nb.ipynb", "-", cwd=tmp_path, stdin=original)
    assert json.loads(piped.stdout) == fixed


def test_dtype_facts_flow_from_cell_to_cell(tmp_path):
    # The model is halved in one cell and called three cells later, with a markdown cell between.
    content = notebook(
        cell("import torch\nmodel = torch.nn.Linear(10, 2)"),
        cell("model = model.half()"),
        cell("Now the inputs.", kind="markdown"),
        cell("inputs = torch.randn(1, 10)"),
        cell("%%time\noutput = model(inputs)"),
    )
    (tmp_path / "nb.ipynb").write_text(content)
    result = run_cli("check", "--no-cache", "--select", "DTL101", "--format", "json", "nb.ipynb", cwd=tmp_path)
    assert [(f["code"], f["cell"], f["line"]) for f in json.loads(result.stdout)] == [("DTL101", 5, 2)]
    fixed = run_cli("fix", "--select", "DTL101", "--unsafe-fixes", "nb.ipynb", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    cells = json.loads((tmp_path / "nb.ipynb").read_text())["cells"]
    assert cells[4]["source"] == "%%time\noutput = model(inputs.to(next(model.parameters()).dtype))"


_CELL_TEXT = st.text(alphabet="ab =(){}'\"#%!?\\\n\t:é", max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    sources=st.lists(st.one_of(_CELL_TEXT, st.lists(_CELL_TEXT, max_size=3)), max_size=4),
    indent=st.sampled_from([None, 1, 2]),
    ascii_only=st.booleans(),
)
def test_any_notebook_round_trips_and_never_crashes(sources, indent, ascii_only):
    cells = [cell(source) for source in sources]
    raw = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=indent, ensure_ascii=ascii_only)
    program = load_program(raw)
    assert program.rebuild(program.text) == raw
    report = check_notebook(raw.encode("utf-8"), "nb.ipynb", Settings())
    assert report.internal_errors == []
    for finding in report.findings:
        assert finding.cell is not None and 1 <= finding.cell <= len(cells)


def test_top_level_await_is_notebook_python(tmp_path):
    # IPython runs top-level ``await``; it must not make the notebook "uncheckable".
    content = notebook(cell("import torch\nbatch = await loader.next()\ns = torch.cuda.amp.GradScaler()"))
    assert json_findings(tmp_path, "nb.ipynb", content) == [("DTL201", 1, 3, 5)]

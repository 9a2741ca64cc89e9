"""The review-bot and code-scanning formats (sarif, github, rdjson), run through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from dtype_lint.edits import apply_edits
from dtype_lint.findings import Edit
from dtype_lint.report.github_format import escape_data, escape_property
from dtype_lint.rules import all_rules
from tests.conftest import run_cli

# The features under test, not the rule catalogue: other rules (DTL307, ...) rightly fire on
# these snippets too, and their findings are not what these tests are about.
ONLY = ("--select", "DTL001,DTL201")

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
DEFECT = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
FIXED = 'import torch\nscaler = torch.amp.GradScaler("cuda")\n'


def _notebook(*sources: str) -> str:
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
        for source in sources
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def _run(tmp_path: Path, fmt: str, *paths: str) -> str:
    result = run_cli("check", *ONLY, "--format", fmt, *paths, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


def _sarif(tmp_path: Path, *paths: str) -> dict:
    log = json.loads(_run(tmp_path, "sarif", *paths))
    jsonschema.Draft7Validator(SCHEMA).validate(log)
    return log


def _results(log: dict) -> list[dict]:
    return log["runs"][0]["results"]


# -- SARIF -------------------------------------------------------------------------------------
def test_sarif_validates_against_the_oasis_schema_and_has_what_code_scanning_needs(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train script.py").write_text("# é\n" + DEFECT, encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch\n", "s = torch.cuda.amp.GradScaler()"))
    (tmp_path / "broken.py").write_text("def f(:\n")
    log = _sarif(tmp_path, "src", "nb.ipynb", "broken.py")
    assert log["version"] == "2.1.0"
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "dtype-lint" and driver["version"] and driver["informationUri"].startswith("https://")
    codes = [rule["id"] for rule in driver["rules"]]
    assert codes == sorted(set(codes)) and {"DTL001", "DTL201"} <= set(codes)
    assert set(codes) <= {rule.code for rule in all_rules()}
    for rule in driver["rules"]:
        assert rule["name"] and rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    by_uri = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r for r in _results(log)}
    assert sorted(by_uri) == ["broken.py", "nb.ipynb", "src/train%20script.py"]
    script = by_uri["src/train%20script.py"]
    assert script["ruleId"] == "DTL201" and script["level"] == "error" and "deprecated" in script["message"]["text"]
    assert codes[script["ruleIndex"]] == "DTL201"
    assert script["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    assert script["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 3, "startColumn": 10, "endLine": 3, "endColumn": 35,
    }
    notebook = by_uri["nb.ipynb"]
    # The region is the notebook's own line holding the code; the cell position is in properties.
    region = notebook["locations"][0]["physicalLocation"]["region"]
    nb_lines = (tmp_path / "nb.ipynb").read_text().splitlines()
    assert "s = torch.cuda.amp.GradScaler()" in nb_lines[region["startLine"] - 1]
    assert region["properties"] == {"cell": 2, "line": 1, "column": 5}
    assert notebook["properties"]["cell"] == 2 and "fixes" not in notebook
    assert by_uri["broken.py"]["ruleId"] == "DTL001"


def test_sarif_fix_replacements_rebuild_the_fixed_source(tmp_path):
    (tmp_path / "train.py").write_text(DEFECT)
    (result,) = _results(_sarif(tmp_path, "train.py"))
    (change,) = result["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "train.py"
    edits = [
        Edit(
            r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"],
            r["deletedRegion"]["endLine"], r["deletedRegion"]["endColumn"], r["insertedContent"]["text"],
        )
        for r in change["replacements"]
    ]
    assert apply_edits(DEFECT, edits) == FIXED


def _fingerprints(log: dict) -> list[tuple[int, str]]:
    return [
        (r["locations"][0]["physicalLocation"]["region"]["startLine"], r["partialFingerprints"]["dtypeLint/v1"])
        for r in _results(log)
    ]


def test_sarif_fingerprints_survive_line_shifts_and_tell_repeated_lines_apart(tmp_path):
    body = "import torch\na = torch.cuda.amp.GradScaler()\nb = 1\na = torch.cuda.amp.GradScaler()\n"
    (tmp_path / "train.py").write_text(body)
    before = _fingerprints(_sarif(tmp_path, "train.py"))
    assert [line for line, _ in before] == [2, 4]
    assert before[0][1] != before[1][1]  # same code, path and line text: the occurrence differs
    assert _fingerprints(_sarif(tmp_path, "train.py")) == before  # stable across runs
    (tmp_path / "train.py").write_text("# a new header\n\n\n" + body.replace("b = 1", "b  =  1"))
    after = _fingerprints(_sarif(tmp_path, "train.py"))
    assert [line for line, _ in after] == [5, 7]
    assert [fp for _, fp in after] == [fp for _, fp in before]
    (tmp_path / "train.py").write_text(body.replace("a = torch", "scaler = torch", 1))
    changed = _fingerprints(_sarif(tmp_path, "train.py"))
    assert changed[0][1] != before[0][1]  # a different line is a different alert


def test_sarif_with_no_findings_is_still_valid(tmp_path):
    (tmp_path / "ok.py").write_text("import torch\nscaler = torch.amp.GradScaler('cuda')\n")
    log = _sarif(tmp_path, "ok.py")
    assert _results(log) == [] and log["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_output_format_from_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\noutput-format = "sarif"\n')
    (tmp_path / "train.py").write_text(DEFECT)
    result = run_cli("check", *ONLY, "train.py", cwd=tmp_path)
    assert result.returncode == 1
    assert _results(json.loads(result.stdout))[0]["ruleId"] == "DTL201"


# -- GitHub annotations ------------------------------------------------------------------------
def test_github_annotations_one_per_finding(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.4\n")  # the replacement exists (issue 21)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(DEFECT)
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch\n", "x = 1\ns = torch.cuda.amp.GradScaler()"))
    lines = _run(tmp_path, "github", "pkg", "nb.ipynb").splitlines()
    assert lines == [
        "::error file=nb.ipynb,title=DTL201::cell 2, line 2, column 5: `torch.cuda.amp.GradScaler` is deprecated;"
        ' use `torch.amp.GradScaler("cuda", ...)`',
        "::error file=pkg/train.py,line=2,endLine=2,col=10,endColumn=35,title=DTL201::`torch.cuda.amp.GradScaler`"
        ' is deprecated; use `torch.amp.GradScaler("cuda", ...)`',
    ]


def test_github_escaping_follows_the_workflow_command_rules(tmp_path):
    assert escape_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"
    (tmp_path / "a,b:c.py").write_text(DEFECT)
    (line,) = _run(tmp_path, "github", "a,b:c.py").splitlines()
    assert line.startswith("::error file=a%2Cb%3Ac.py,line=2,")


# -- reviewdog ---------------------------------------------------------------------------------
def test_rdjson_byte_columns_and_fix_as_one_suggestion(tmp_path):
    source = 'import torch\nname = "ünï"; scaler = torch.cuda.amp.GradScaler()\n'
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    document = json.loads(_run(tmp_path, "rdjson", "train.py"))
    assert document["source"]["name"] == "dtype-lint"
    (diagnostic,) = document["diagnostics"]
    assert diagnostic["code"]["value"] == "DTL201" and diagnostic["severity"] == "ERROR"
    assert diagnostic["location"]["path"] == "train.py"
    line_bytes = source.splitlines()[1].encode("utf-8")
    start = diagnostic["location"]["range"]["start"]
    assert start["line"] == 2
    assert line_bytes[start["column"] - 1 :].startswith(b"torch.cuda.amp.GradScaler")
    (suggestion,) = diagnostic["suggestions"]
    assert suggestion["range"]["start"] == {"line": 2, "column": 1}
    assert suggestion["range"]["end"] == {"line": 2, "column": len(line_bytes) + 1}
    assert suggestion["text"] == 'name = "ünï"; scaler = torch.amp.GradScaler("cuda")'


def test_rdjson_notebook_finding_names_the_cell(tmp_path):
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch\n", "s = torch.cuda.amp.GradScaler()"))
    (diagnostic,) = json.loads(_run(tmp_path, "rdjson", "nb.ipynb"))["diagnostics"]
    assert diagnostic["location"] == {"path": "nb.ipynb"}
    assert diagnostic["message"].startswith("cell 2, line 1, column 5: ")
    assert "suggestions" not in diagnostic


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github", "rdjson"])
def test_every_format_reports_the_same_finding(tmp_path, fmt):
    (tmp_path / "train.py").write_text(DEFECT)
    result = run_cli("check", *ONLY, "--format", fmt, "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "DTL201" in result.stdout


# -- stdin -------------------------------------------------------------------------------------
def test_stdin_filename_names_the_file_and_finds_its_config(tmp_path):
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "pyproject.toml").write_text('[tool.dtype-lint]\nignore = ["DTL201"]\n')
    shown = run_cli("check", *ONLY, "--format", "concise", "--stdin-filename", "models/train.py", "-", cwd=tmp_path, stdin=DEFECT)
    assert shown.returncode == 1
    assert shown.stdout.startswith("models/train.py:2:10: DTL201")
    ignored = run_cli("check", *ONLY, "--stdin-filename", "legacy/train.py", "-", cwd=tmp_path, stdin=DEFECT)
    assert ignored.returncode == 0, ignored.stdout
    notebook = run_cli(
        "check", *ONLY, "--format", "concise", "--stdin-filename", "nb.ipynb", "-", cwd=tmp_path,
        stdin=_notebook("import torch\n", "s = torch.cuda.amp.GradScaler()"),
    )
    assert notebook.stdout.startswith("nb.ipynb:cell 2:1:5: DTL201"), notebook.stdout


def test_sarif_notebook_fingerprints_survive_a_cell_inserted_above(tmp_path):
    defect_cell = "x = 1\ns = torch.cuda.amp.GradScaler()"
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch\n", defect_cell))
    (before,) = _results(_sarif(tmp_path, "nb.ipynb"))
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch\n", "# setup\nseed = 0\n", "\n" + defect_cell))
    (after,) = _results(_sarif(tmp_path, "nb.ipynb"))
    assert (before["properties"]["cell"], after["properties"]["cell"]) == (2, 3)
    assert after["locations"][0]["physicalLocation"]["region"]["properties"]["line"] == 3
    assert after["partialFingerprints"] == before["partialFingerprints"]

"""The real-bug benchmark's scorer (benchmarks/realbugs/score.py) on two tiny cases of its own."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCORE = ROOT / "benchmarks" / "realbugs" / "score.py"


@pytest.fixture(scope="module")
def score_module():
    spec = importlib.util.spec_from_file_location("realbugs_score", SCORE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["realbugs_score"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules["realbugs_score"]


def _write(folder: Path, files: dict) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_markers_group_the_two_ends_of_a_defect(score_module, tmp_path):
    case = _write(tmp_path / "two_ends", {
        "a_model.py": "# realbugs-case: bug | family: 1 | shape: - | twin: -\n"
                      "# source: https://example.org/issue/1\n"
                      "model = model.half()  # realbug: @load\n",
        "b_use.py": "out = model(x)  # realbug: f7 @load\n"
                    "y = 1e9  # realbug: s2\n",
    })
    loaded = score_module.load_case(case)
    assert loaded.kind == "bug" and loaded.source == "https://example.org/issue/1"
    assert len(loaded.defects) == 2
    ends, single = loaded.defects
    assert ends.sites == [("a_model.py", 3), ("b_use.py", 1)]
    assert ends.families == ("f7",) and ends.shapes == ()
    assert single.sites == [("b_use.py", 2)] and single.families == ("f1",) and single.shapes == ("s2",)


def test_a_bug_case_without_a_defect_line_is_refused(score_module, tmp_path):
    case = _write(tmp_path / "empty", {"main.py": "# realbugs-case: bug | family: 3\nx = 1\n"})
    with pytest.raises(SystemExit):
        score_module.load_case(case)


def test_scoring_runs_the_installed_checker(tmp_path):
    """A found defect, a missed one and a flagged trap, scored through the real CLI."""
    cases = tmp_path / "cases"
    _write(cases / "found", {
        "train.py": "# realbugs-case: bug | family: 3 | shape: -\n"
                    "import torch\n"
                    "grid = torch.zeros(3, 3)\n"
                    "value = torch.tensor(5, dtype=torch.float64)\n"
                    "grid[[0, 1], 1] = value  # realbug:\n",
    })
    _write(cases / "missed", {
        "train.py": "# realbugs-case: bug | family: 7 | shape: -\n"
                    "precision = load_precision()  # realbug:\n",
    })
    _write(cases / "trap_flagged", {
        "t.py": "# realbugs-case: trap | family: 3 | shape: -\n"
                "import torch\n"
                "a = torch.randn(2, 2, dtype=torch.float64)\n"
                "b = a @ torch.randn(2, 2)\n",
    })
    result = subprocess.run(
        [sys.executable, str(SCORE), "--json", "--cases-dir", str(cases)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    summary = report["summary"]
    assert summary["defects"] == {"found": 1, "total": 2, "recall": 0.5}
    assert summary["per_family"]["f3"]["found"] == 1 and summary["per_family"]["f7"]["found"] == 0
    assert summary["traps_flagged"] == {"flagged": 1, "total": 1}
    rows = {row["case"]: row for row in report["cases"]}
    assert rows["found"]["codes"] == ["DTL104"] and rows["trap_flagged"]["codes"] == ["DTL107"]

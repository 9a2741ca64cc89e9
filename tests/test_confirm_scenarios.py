"""``dtype-lint confirm --device cpu`` on every bundled scenario (runtime/scenarios/).

Each defect file marks its defect line with ``# defect: DTLxxx``. When the static rule reports
that line, the finding must be confirmed; when it does not (the rule is not there yet, or misses
this case), the run must still show the defect there as a runtime-only finding for that rule.
Each ``*_fixed.py`` twin must run cleanly: nothing confirmed, nothing seen at run time.
"""

import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import torch  # noqa: F401,E402  (the test extra installs it: fail loudly when absent)

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "runtime" / "scenarios"
MARKER = re.compile(r"#\s*defect:\s*(DTL\d{3})")
TORCHRUN = ("dtl703_rank_dependent_dtype.py", "dtl703_rank_dependent_dtype_fixed.py")


def _defects(path: Path) -> list[tuple[int, str]]:
    return [
        (number, match.group(1))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for match in [MARKER.search(line)]
        if match
    ]


SINGLE = sorted(p.name for p in SCENARIOS.glob("*.py") if p.name not in TORCHRUN)
DEFECTS = [name for name in SINGLE if not name.endswith("_fixed.py")]
TWINS = [name for name in SINGLE if name.endswith("_fixed.py")]


def _confirm(*program: str) -> tuple[int, dict]:
    result = subprocess.run(
        [sys.executable, "-m", "dtype_lint", "confirm", "--quiet", "--device", "cpu", "--format", "json",
         "--timeout", "240", "--", *program],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in result.stdout
    try:
        return result.returncode, json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"confirm printed no JSON report:\n{result.stdout}\n{result.stderr[-3000:]}")


@pytest.fixture(scope="module")
def reports():
    """All single-process scenarios, two at a time (each run is mostly torch's import)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda name: _confirm(f"runtime/scenarios/{name}"), SINGLE)
        return dict(zip(SINGLE, results))


def _claims_at(report: dict, code: str, line: int) -> list[dict]:
    """Runtime-only evidence for ``code`` whose stack or origins pass through ``line``."""
    found = []
    for row in report["runtime_only"]:
        if code not in row["related_codes"]:
            continue
        for evidence in row["evidence"]:
            lines = {frame["line"] for frame in evidence["stack"] + evidence["origins"]}
            if line in lines:
                found.append(evidence)
    return found


def test_every_defect_has_a_twin_and_a_marker():
    assert len(DEFECTS) >= 9
    for name in DEFECTS:
        assert name.replace(".py", "_fixed.py") in TWINS, name
        assert _defects(SCENARIOS / name), f"{name} has no '# defect: DTLxxx' marker"
    for name in TWINS:
        assert not _defects(SCENARIOS / name), name


@pytest.mark.parametrize("name", DEFECTS)
def test_defect_is_confirmed_on_its_line(reports, name):
    returncode, report = reports[name]
    assert report["run"]["emulated"] is True
    for line, code in _defects(SCENARIOS / name):
        static = [f for f in report["findings"] if f["code"] == code and f["line"] <= line <= f["end_line"]]
        if static:
            assert [f["verdict"] for f in static] == ["confirmed"], static
            evidence = static[0]["evidence"][0]
            assert evidence["message"] and evidence["ranks"] == [0]
        else:
            # The static rule does not report this line (yet): the run alone must show the defect.
            assert _claims_at(report, code, line), (name, code, line, report["runtime_only"])
    confirmed = any(f["verdict"] == "confirmed" for f in report["findings"])
    assert returncode == (1 if confirmed else 0)


@pytest.mark.parametrize("name", TWINS)
def test_fixed_twin_confirms_nothing(reports, name):
    returncode, report = reports[name]
    assert [f for f in report["findings"] if f["verdict"] == "confirmed"] == []
    assert report["runtime_only"] == []
    assert report["run"]["returncode"] == 0, report["run"]
    assert returncode == 0


def test_clip_before_unscale_reports_the_scaled_norm(reports):
    _, report = reports["dtl303_clip_before_unscale.py"]
    evidence = [e for f in report["findings"] for e in f["evidence"] if e["what"] == "clip-before-unscale"]
    evidence += [e for row in report["runtime_only"] for e in row["evidence"] if e["what"] == "clip-before-unscale"]
    detail = evidence[0]["detail"]
    assert detail["scale"] == 65536.0
    assert detail["norm"] == pytest.approx(detail["true_norm"] * 65536.0)
    assert detail["norm"] > 1000 * detail["max_norm"]


def test_torchrun_two_ranks_rank_dependent_dtype():
    returncode, report = _confirm(
        "torchrun", "--nproc-per-node", "2", "runtime/scenarios/dtl703_rank_dependent_dtype.py"
    )
    assert report["run"]["ranks"] == [0, 1]
    assert report["run"]["processes"] == 2  # the two ranks; the torchrun launcher is not instrumented
    rows = [f for f in report["findings"] if f["code"] == "DTL703"] + [
        row for row in report["runtime_only"] if "DTL703" in row["related_codes"]
    ]
    evidence = [e for row in rows for e in row["evidence"] if e["what"] == "rank-dependent-dtype"]
    assert evidence, report
    assert evidence[0]["ranks"] == [0, 1]
    assert evidence[0]["detail"]["dtypes"] == {"0": ["float64"], "1": ["float32"]}
    for row in rows:
        if row["code"] == "DTL703" and row["verdict"] != "runtime-only":
            assert row["verdict"] == "confirmed"


def test_torchrun_two_ranks_fixed_twin():
    returncode, report = _confirm(
        "torchrun", "--nproc-per-node", "2", "runtime/scenarios/dtl703_rank_dependent_dtype_fixed.py"
    )
    assert report["run"]["ranks"] == [0, 1]
    assert report["run"]["outcome"].startswith(("stopped after", "the program finished")), report["run"]
    assert [f for f in report["findings"] if f["verdict"] == "confirmed"] == []
    assert report["runtime_only"] == []
    assert returncode == 0

"""``dtype-lint confirm`` on real training programs (tests/data/confirm/), issue 15's points 1-8
and issue 12's defect 9, each driven through the real CLI with torch on the CPU.

The programs run once, in parallel, in a module-scoped fixture; each test reads its report.
"""

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dtype_lint.findings import Confidence, Finding
from dtype_lint.runtime.verdicts import decide

import torch  # noqa: F401,E402  (the test extra installs it: fail loudly when absent)

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = Path("tests") / "data" / "confirm"


def _confirm(*args, env=None, quiet=True):
    command = [sys.executable, "-m", "dtype_lint", "confirm", "--timeout", "120"]
    command += ["--quiet"] if quiet else []
    result = subprocess.run(
        command + list(args), cwd=ROOT, capture_output=True, text=True, timeout=180,
        env=dict(os.environ, **(env or {})),
    )
    return result


def _runs(tmp: Path) -> dict:
    # Point 1: a CUDA build of torch on a machine with no NVIDIA driver, simulated by a sitecustomize
    # (the environment's own, which confirm's bootstrap runs too).
    simulation = tmp / "cuda-build"
    simulation.mkdir()
    (simulation / "sitecustomize.py").write_text((ROOT / PROGRAMS / "cuda_build_without_driver.py").read_text())
    # Issue 12, defect 9: an environment where the program's interpreter has no torch.
    no_torch = tmp / "no-torch"
    no_torch.mkdir()
    (no_torch / "torch.py").write_text("raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n")
    (tmp / "needs_torch.py").write_text("print('line 1 ran')\nimport torch\n")
    # The programs run from a folder outside tests/: set-up rules (DTL404...) are silent in test files.
    programs = tmp / "programs"
    shutil.copytree(ROOT / PROGRAMS, programs)
    report = tmp / "report.json"
    probe = ("import torch\n"
             "print(torch.cuda.is_available(), torch.accelerator.current_accelerator())\n"
             "torch.accelerator.current_device_index()\n")
    jobs = {
        "simulation": lambda: subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                                             env=dict(os.environ, PYTHONPATH=str(simulation))),
        "conv": lambda: _confirm("--format", "json", str(programs / "conv_fp16_input.py")),
        "conv-text": lambda: _confirm(str(programs / "conv_fp16_input.py"), quiet=False),
        "cuda-build": lambda: _confirm("--steps", "3", "--format", "json", str(programs / "adam_dataloader.py"),
                                       env={"PYTHONPATH": str(simulation)}),
        "accelerator": lambda: _confirm("--steps", "10", "--format", "json", str(programs / "accelerator_device.py")),
        "silent": lambda: _confirm("--steps", "10", "--format", "json", str(programs / "silent_lowp.py")),
        "silent-fixed": lambda: _confirm("--steps", "10", "--format", "json", str(programs / "silent_lowp_fixed.py")),
        "ddp": lambda: _confirm("--format", "json", "--", sys.executable, "-m", "torch.distributed.run",
                                "--nproc-per-node", "2", str(programs / "ddp_rank_dtype.py")),
        "overflow": lambda: _confirm("--steps", "12", "--format", "json", "--output", str(report),
                                     str(programs / "scaler_overflow_clip.py")),
        "crash-first": lambda: _confirm("--format", "json", str(programs / "crash_before_step.py")),
        "argparse": lambda: _confirm(str(programs / "argparse_exit.py"), quiet=False,
                                     env={"DTYPE_LINT_CONFIRM_PROGRESS_S": "1"}),
        "no-torch": lambda: _confirm("--format", "json", str(tmp / "needs_torch.py"),
                                     env={"PYTHONPATH": str(no_torch)}),
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        results = {name: future.result() for name, future in futures.items()}
    results["overflow-file"] = report.read_text() if report.exists() else ""
    return results


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return _runs(tmp_path_factory.mktemp("confirm-programs"))


def _json(result) -> dict:
    try:
        return json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"no JSON report:\n{result.stdout}\n{result.stderr[-3000:]}")


def _verdicts(report) -> dict:
    return {(f["code"], f["line"]): f for f in report["findings"]}


# -- point 1: a CUDA build of torch without a driver ------------------------------------------
def test_adam_adamw_adadelta_and_pinned_loader_run_on_a_cuda_build_without_driver(runs):
    result = runs["cuda-build"]
    report = _json(result)
    assert report["run"]["outcome"].startswith("stopped after 3 training iterations"), report["run"]
    assert "NVIDIA driver" not in json.dumps(report)
    assert report["run"]["emulated"] and report["run"]["device_note"]
    assert result.returncode == 0, report["run"]


def test_the_simulation_behaves_as_a_driverless_cuda_build(runs):
    """What the simulation stands for: CUDA compiled in, no device, every CUDA initialisation fails."""
    result = runs["simulation"]
    assert result.stdout.split() == ["False", "cuda"]
    assert "RuntimeError: Found no NVIDIA driver on your system" in result.stderr


# -- point 2 and 3: the seed crash maps, and CI sees it --------------------------------------
def test_fp16_input_into_fp32_conv_is_shown_and_exits_1(runs):
    result = runs["conv"]
    report = _json(result)
    # DTL108 (float32 model, half input) finds the line statically; the crash is its evidence.
    [finding] = report["findings"]
    assert (finding["code"], finding["line"], finding["verdict"]) == ("DTL108", 7, "confirmed")
    [evidence] = finding["evidence"]
    assert evidence["what"] == "dtype-mismatch"
    assert "Input type (c10::Half) and bias type (float)" in evidence["message"]
    assert report["runtime_only"] == []
    assert result.returncode == 1


def test_pure_cpu_run_has_no_emulation_note_and_no_companion_frames(runs):
    result = runs["conv-text"]
    assert "CUDA emulated" not in result.stdout
    assert "nothing to report" not in result.stdout
    traceback = result.stderr[result.stderr.index("Traceback"):]
    assert "conv_fp16_input.py\", line 7" in traceback
    assert "dtype_lint" not in traceback  # the observer sits in every call: its frames stay hidden
    assert result.returncode == 1


# -- point 4: a crash before the first optimizer step ------------------------------------------
def test_a_crash_before_any_step_leaves_step_rules_not_tested(runs):
    report = _json(runs["crash-first"])
    verdicts = _verdicts(report)
    assert verdicts[("DTL101", 8)]["verdict"] == "confirmed"
    adam = verdicts[("DTL404", 7)]
    assert adam["verdict"] == "not tested"
    assert "no optimizer step ran" in adam["note"] and "mat1 and mat2" in adam["note"]
    assert runs["crash-first"].returncode == 1


def test_a_different_defect_on_the_flagged_line_is_never_not_reproduced():
    def finding(code, line):
        return Finding(code, "name", "message", line, 1, line, 9, Confidence.HIGH, path="/p/train.py")

    records = [
        {"kind": "start", "rank": 0, "pid": 1, "step": 0, "emulated": False, "cuda": False},
        {"kind": "reach", "path": "/p/train.py", "line": 5, "rank": 0, "step": 0},
        {"kind": "reach", "path": "/p/train.py", "line": 9, "rank": 0, "step": 2},
        {"kind": "claim", "what": "int-dtype", "codes": ["DTL106"], "message": "expected target dtype to be Long",
         "stack": [["/p/train.py", 5]], "origins": [], "detail": {"exception": "RuntimeError"}, "rank": 0,
         "step": 2},
    ]
    verdicts, runtime_only, _ = decide([finding("DTL102", 5), finding("DTL303", 9)], records)
    assert [v.verdict for v in verdicts] == ["not tested", "not reproduced"]
    assert "expected target dtype" in verdicts[0].note
    assert [v.what for v in runtime_only] == ["int-dtype"]


# -- point 5: the device picked through torch.accelerator; DataParallel -----------------------
def test_accelerator_picked_device_takes_the_fp16_scaler_path(runs):
    result = runs["accelerator"]
    report = _json(result)
    run = report["run"]
    assert run["scaler"]["updates"] == 3, run  # the fp16 GradScaler path really ran
    assert run["emulated"] and run["device_note"]
    assert not run["notes"] or "raised" not in " ".join(run["notes"])
    assert run["outcome"].startswith("the program finished after 3 of 10 training iterations")
    assert result.returncode == 0


# -- point 6: silent low-precision defects ------------------------------------------------------
def test_silent_lowp_defects_are_seen(runs):
    result = runs["silent"]
    report = _json(result)
    verdicts = _verdicts(report)
    eps = verdicts[("DTL404", 10)]
    assert eps["verdict"] == "confirmed"
    assert "below float16's smallest normal" in eps["evidence"][0]["message"]
    toggle = verdicts[("DTL403", 29)]
    assert toggle["verdict"] == "confirmed"
    assert "float16 -> float32" in toggle["evidence"][0]["message"]
    [rounded] = [row for row in report["runtime_only"] if row["name"] == "updates-rounded-to-zero"]
    assert "bfloat16" in rounded["message"]
    origins = rounded["evidence"][0]["origins"]
    assert any(o["path"].endswith("/programs/silent_lowp.py") and o["line"] == 13 for o in origins), origins
    assert result.returncode == 1


def test_silent_lowp_clean_copy_is_clean(runs):
    result = runs["silent-fixed"]
    report = _json(result)
    assert report["runtime_only"] == []
    assert all(f["verdict"] != "confirmed" for f in report["findings"])
    assert result.returncode == 0


# -- point 7: DDP over models whose dtypes differ by rank ---------------------------------------
def test_ddp_parameter_dtype_by_rank_is_seen_at_construction(runs):
    result = runs["ddp"]
    report = _json(result)
    [row] = [r for r in report["runtime_only"] if r["name"] == "rank-dependent-dtype"]
    assert row["line"] == 13 and "DTL703" in row["related_codes"]
    assert "float32 on rank 0, float64 on rank 1" in row["message"]
    assert row["evidence"][0]["ranks"] == [0, 1]
    notes = report["run"]["notes"]
    assert not any("Connection reset" in note for note in notes)
    # Rank 0 died in gloo's C++ (no Python exception): its abort message is the note, not rank 1's.
    assert any("collective mismatch" in note and "DTL703" in note for note in notes), notes
    assert result.returncode == 1


# -- point 8: evidence from a finite step, exact step counts, --output, progress -----------------
def test_clip_evidence_comes_from_a_finite_step_and_output_file(runs):
    assert runs["overflow"].stdout == ""
    report = json.loads(runs["overflow-file"])
    run = report["run"]
    assert run["outcome"].startswith("the program finished after 12 training iterations"), run["outcome"]
    assert run["scaler"]["skipped_steps"] >= 1  # the first steps overflowed and were skipped
    clip = _verdicts(report)[("DTL303", 15)]
    assert clip["verdict"] == "confirmed"
    detail = clip["evidence"][0]["detail"]
    assert detail["norm"] < float("inf") and 0 < detail["true_norm"] < 100
    assert runs["overflow"].returncode == 1


def test_program_failing_on_its_own_exits_1_with_progress_lines(runs):
    result = runs["argparse"]
    assert "the program exited with status 2" in result.stdout
    assert "before running any Python code" not in result.stdout
    assert "the following arguments are required: --lr" in result.stdout
    assert "nothing seen at run time" not in result.stdout and "maps to no rule" in result.stdout
    assert "dtype-lint confirm: 1s, iteration 0 of 3" in result.stderr
    assert result.returncode == 1


def test_a_program_without_torch_says_why_the_companion_did_not_start(runs):
    result = runs["no-torch"]
    outcome = _json(result)["run"]["outcome"]
    assert "the companion could not start in the program: ModuleNotFoundError" in outcome
    assert "before running any Python code" not in outcome
    assert result.returncode == 2

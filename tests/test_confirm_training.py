"""``dtype-lint confirm`` never calls a broken training run clean (issue 23, A-H), and stops every
process it started when it is stopped itself (issue 24, item 9).

Each program in tests/data/confirm/ runs once under the real CLI with torch on the CPU (CUDA
emulated where the program is written for CUDA), two at a time, in a module-scoped fixture.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import torch  # noqa: F401,E402  (the test extra installs it: fail loudly when absent)

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = Path("tests") / "data" / "confirm"


def _confirm(*args, cwd=ROOT):
    command = [sys.executable, "-m", "dtype_lint", "confirm", "--quiet", "--device", "cpu", "--timeout", "180"]
    return subprocess.run(command + list(args), cwd=cwd, capture_output=True, text=True, timeout=300)


# B: one program, four rules, each set aside a different way: a `# noqa` comment (DTL201), a
# per-file-ignores entry (DTL705), the baseline (DTL303) and --ignore (DTL204). Every one of them
# also shows at run time.
IGNORED_PROGRAM = """\
import torch
from torch import nn

torch.autograd.set_detect_anomaly(True)
model = nn.Linear(8, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = torch.cuda.amp.GradScaler()  # noqa: DTL201
for step in range(3):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(torch.randn(16, 8, device="cuda")).float().pow(2).mean()
        scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
"""


def _ignored_project(tmp: Path) -> Path:
    project = tmp / "ignored"
    project.mkdir()
    (project / "train.py").write_text(IGNORED_PROGRAM)
    written = subprocess.run(
        [sys.executable, "-m", "dtype_lint", "check", "--select", "DTL303", "--write-baseline", "baseline.json",
         "train.py"], cwd=project, capture_output=True, text=True, timeout=120,
    )
    assert written.returncode == 0, written.stderr
    (project / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.dtype-lint]
        baseline = "baseline.json"

        [tool.dtype-lint.per-file-ignores]
        "train.py" = ["DTL705"]
        """))
    return project


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    project = _ignored_project(tmp_path_factory.mktemp("confirm-training"))
    jobs = {
        "two-optimizers": lambda: _confirm("--format", "json", str(PROGRAMS / "two_optimizers_one_scaler.py")),
        "hand-update": lambda: _confirm("--format", "json", str(PROGRAMS / "hand_update_scaled.py")),
        "forward-overflow": lambda: _confirm(str(PROGRAMS / "forward_overflow_skips.py")),
        "gradient-overflow": lambda: _confirm("--format", "json", str(PROGRAMS / "gradient_overflow_skips.py")),
        "settling": lambda: _confirm("--format", "json", str(PROGRAMS / "settling_scale.py")),
        "eval-flip": lambda: _confirm("--format", "json", str(PROGRAMS / "eval_flip_first_step.py")),
        "cpu-scaler": lambda: _confirm("--format", "json", str(PROGRAMS / "cpu_device_cuda_scaler.py")),
        "ignored": lambda: _confirm("--ignore", "DTL204", "train.py", cwd=project),
        "runtime-only": lambda: _confirm("--format", "json", str(PROGRAMS / "runtime_only_rules.py"), "float16"),
        "runtime-only-sarif": lambda: _confirm("--format", "sarif", "--ignore", "DTL404",
                                               str(PROGRAMS / "runtime_only_rules.py"), "float16"),
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def _json(result) -> dict:
    try:
        return json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"no JSON report:\n{result.stdout}\n{result.stderr[-3000:]}")


def _rows(report, what) -> list[dict]:
    """Static findings and runtime-only rows that carry evidence of kind ``what``."""
    rows = report["findings"] + report["runtime_only"]
    return [row for row in rows if any(e["what"] == what for e in row["evidence"])]


# -- A and F: two optimizers, one scaler ---------------------------------------------------------
def test_second_optimizer_stepped_by_hand_after_scaler_step_is_confirmed(runs):
    result = runs["two-optimizers"]
    report = _json(result)
    [finding] = [f for f in report["findings"] if f["code"] == "DTL305"]
    assert (finding["line"], finding["verdict"]) == (19, "confirmed"), finding
    bypass = [e for e in finding["evidence"] if e["what"] == "step-bypasses-scaler"]
    assert bypass and "65536x too large" in bypass[0]["message"]
    assert result.returncode == 1


def test_steps_count_training_iterations_not_step_calls(runs):
    run = _json(runs["two-optimizers"])["run"]
    # Two optimizers step once per iteration: --steps 3 is three iterations, three scaler updates.
    assert run["outcome"].startswith("stopped after 3 training iterations"), run["outcome"]
    assert run["scaler"]["updates"] == 3 and run["steps_run"] == 3


# -- C: a hand-written update from scaled gradients ----------------------------------------------
def test_hand_written_update_from_scaled_gradients_is_a_defect(runs):
    result = runs["hand-update"]
    report = _json(result)
    # The static check finds it at the scaled backward; the run confirms it there.
    [finding] = [f for f in report["findings"] if f["code"] == "DTL305"]
    assert (finding["line"], finding["verdict"]) == (14, "confirmed"), finding
    [evidence] = [e for e in finding["evidence"] if e["what"] == "update-from-scaled-gradients"]
    assert "loss scale 65536" in evidence["message"]
    assert result.returncode == 1


# -- D: every step skipped -------------------------------------------------------------------------
def test_forward_overflow_that_skips_every_step_is_a_defect(runs):
    result = runs["forward-overflow"]
    assert "nothing to report" not in result.stdout
    assert "DTL503 nonfinite-loss  RUNTIME-ONLY" in result.stdout, result.stdout
    assert "3 steps skipped" in result.stdout
    assert result.returncode == 1


def test_gradients_that_overflow_at_every_scale_are_a_defect(runs):
    result = runs["gradient-overflow"]
    report = _json(result)
    run = report["run"]
    # The run went on past --steps 3 while the scale backed off, until it fell below 1.
    assert run["scaler"]["updates"] == run["scaler"]["skipped_steps"] > 3, run["scaler"]
    assert run["scaler"]["scales"][1] < 1
    [row] = [r for r in report["runtime_only"] if r["name"] == "every-step-skipped"]
    assert row["code"] == "DTL503" and "no optimizer step took effect" in row["message"]
    assert result.returncode == 1


def test_a_scale_that_settles_after_skipped_steps_is_clean(runs):
    result = runs["settling"]
    report = _json(result)
    run = report["run"]
    assert run["scaler"]["skipped_steps"] > 3  # more than --steps: the run went on until one took effect
    assert run["scaler"]["updates"] == run["scaler"]["skipped_steps"] + 1
    assert report["runtime_only"] == [] and report["findings"] == []
    assert result.returncode == 0


# -- E: a dtype flip before the first optimizer step --------------------------------------------
def test_dtype_flip_before_the_first_step_is_seen(runs):
    result = runs["eval-flip"]
    report = _json(result)
    [row] = _rows(report, "param-dtype-changed")
    [evidence] = [e for e in row["evidence"] if e["what"] == "param-dtype-changed"]
    assert "before its first step" in evidence["message"] and "float16 -> float32" in evidence["message"]
    assert {"path": str(PROGRAMS / "eval_flip_first_step.py"), "line": 13} in evidence["origins"]  # net.float()
    assert result.returncode == 1


# -- G: a CUDA GradScaler in a program that never uses CUDA --------------------------------------
def test_emulation_keeps_a_cuda_scaler_off_in_a_cpu_program(runs):
    result = runs["cpu-scaler"]
    report = _json(result)
    run = report["run"]
    assert run["scaler"]["updates"] == 0  # disabled, as torch disables it without CUDA
    assert not run["device_note"]  # nothing of CUDA's was emulated
    assert report["runtime_only"] == [] and report["findings"] == []
    assert result.returncode == 0


# -- B: an ignored rule stays ignored at run time -------------------------------------------------
def test_rules_set_aside_stay_aside_at_run_time(runs):
    result = runs["ignored"]
    assert "the program finished after 3 training iterations" in result.stdout, result.stdout + result.stderr
    assert "RUNTIME-ONLY" not in result.stdout and "CONFIRMED" not in result.stdout
    assert "nothing seen at run time" in result.stdout
    assert result.returncode == 0


# -- H: a runtime-only finding names its rule ------------------------------------------------------
def test_runtime_only_findings_name_their_rule(runs):
    result = runs["runtime-only"]
    report = _json(result)
    assert report["findings"] == []  # the dtype comes from the command line: the static check is silent
    codes = {row["name"]: row["code"] for row in report["runtime_only"]}
    assert codes["eps-below-dtype"] == "DTL404"
    assert codes["nonfinite-params"] == "DTL404"  # the eps that vanished, not the first related rule
    assert codes["dtype-mismatch"] == "DTL108"  # a half input into a float32 layer
    assert result.returncode == 1


def test_runtime_only_findings_are_their_rule_in_sarif_and_for_ignore(runs):
    log = json.loads(runs["runtime-only-sarif"].stdout)
    results = log["runs"][0]["results"]
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [(r["ruleId"], r["properties"]["verdict"]) for r in results] == [("DTL108", "runtime-only")]
    assert rules[results[0]["ruleIndex"]]["id"] == "DTL108"


# -- issue 24, item 9: confirm stopped by a signal, or timing out ----------------------------------
def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _stopped_run(tmp: Path, how: str) -> tuple[subprocess.CompletedProcess, list[int], Path]:
    """confirm on session_grandchild.py, stopped by ``how``: a signal, or --timeout."""
    workdir, pids = tmp / how, tmp / f"{how}.pids"
    workdir.mkdir()
    timeout = ["--timeout", "15"] if how == "timeout" else []
    process = subprocess.Popen(
        [sys.executable, "-m", "dtype_lint", "confirm", "--quiet", "--device", "cpu", "--format", "json", *timeout,
         str(PROGRAMS / "session_grandchild.py"), str(pids)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, TMPDIR=str(workdir)), start_new_session=True,  # its own group: a terminal's
    )
    deadline = time.monotonic() + 120
    while not pids.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
    if how == "SIGINT":
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the foreground group
    elif how != "timeout":
        process.send_signal(getattr(signal, how))
    out, err = process.communicate(timeout=120)
    program = [int(pid) for pid in pids.read_text().split()] if pids.exists() else []
    return subprocess.CompletedProcess(process.args, process.returncode, out, err), program, workdir


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and a child subreaper")
def test_stopped_confirm_stops_every_process_removes_its_files_and_reports(tmp_path):
    cases = {"SIGTERM": 128 + signal.SIGTERM, "SIGHUP": 128 + signal.SIGHUP, "SIGINT": 128 + signal.SIGINT,
             "timeout": None}
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        results = dict(zip(cases, pool.map(lambda how: _stopped_run(tmp_path, how), cases)))
    for how, (result, program, workdir) in results.items():
        assert len(program) == 2, (how, result.stdout, result.stderr[-2000:])
        time.sleep(0.2)
        assert [pid for pid in program if _alive(pid)] == [], how  # the program and its grandchild
        assert list(workdir.iterdir()) == [], how  # the temp dir is gone
        report = json.loads(result.stdout)  # what was seen is reported
        if how == "timeout":
            assert report["run"]["timed_out"] and result.returncode in (0, 1)
        else:
            assert report["run"]["outcome"].startswith(f"confirm was stopped by {how}"), report["run"]
            assert result.returncode == cases[how], (how, result.stderr[-2000:])


# -- the pure parts: which rule a runtime-only finding is, and when it stays set aside -----------
@pytest.mark.parametrize(
    "text, code",
    [
        ("mat1 and mat2 must have the same dtype, but got Half and Float", "DTL108"),  # half input, fp32 layer
        ("mat1 and mat2 must have the same dtype, but got Float and BFloat16", "DTL101"),  # fp32 input, bf16 layer
        ("Input type (c10::Half) and bias type (float) should be the same", "DTL108"),
        ("Input type (float) and bias type (c10::Half) should be the same", "DTL101"),
        ("Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same", "DTL108"),
        ("expected m1 and m2 to have the same dtype, but got: float != c10::Half", "DTL107"),  # two operands
        ("Attempting to unscale FP16 gradients.", "DTL302"),
    ],
)
def test_a_runtime_message_names_one_rule(text, code):
    from dtype_lint.runtime import messages

    assert messages.primary_code(messages.classify(text), text) == code


def test_ignored_runtime_only_findings_by_selection_and_comment(tmp_path):
    from dtype_lint.config import Settings
    from dtype_lint.runtime.verdicts import RUNTIME_ONLY, Verdict, drop_ignored

    train = tmp_path / "train.py"
    train.write_text("main()  # noqa\nstep()  # noqa: DTL305\nbare()  # noqa\nplain()\n")
    path = str(train)

    def row(code, stack, origins=()):
        claim = {"stack": [[path, line] for line in stack], "origins": [[path, line] for line in origins]}
        top = (list(stack) + list(origins))[0]
        return Verdict(None, RUNTIME_ONLY, [claim], path=path, line=top, what=code, code=code)

    rows = [
        row("DTL305", [4], origins=[2]),  # its scale() line names DTL305: where the static finding would be
        row("DTL404", [4, 1]),  # a bare noqa on an outer frame (main()) does not reach it
        row("DTL503", [3]),  # a bare noqa on the line it is reported at does
        row("DTL108", [4]),  # --ignore DTL108
        row("DTL201", [4]),  # shown
    ]
    kept = drop_ignored(rows, Settings(ignore=("DTL108",), root=str(tmp_path)))
    assert [verdict.code for verdict in kept] == ["DTL404", "DTL201"]
    per_file = Settings(per_file_ignores=(("train.py", ("DTL2",)),), root=str(tmp_path))
    assert [verdict.code for verdict in drop_ignored(rows[3:], per_file)] == ["DTL108"]

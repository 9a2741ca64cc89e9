"""``dtype-lint confirm``: command parsing, message families, verdict logic, and bad input.

The pure parts (program parsing, message families, verdicts from evidence records) are tested
in-process; everything else runs the real CLI on small programs with real torch on the CPU.
"""

import hashlib
import json
import os
import sys
import textwrap

import jsonschema
import pytest

from dtype_lint.errors import UsageError
from dtype_lint.findings import Confidence, Finding
from dtype_lint.runtime import messages
from dtype_lint.runtime.companion import is_launcher
from dtype_lint.runtime.program import parse_command, program_files
from dtype_lint.runtime.verdicts import decide

from conftest import ROOT, run_cli


# -- the command line ------------------------------------------------------------------------
def test_script_runs_with_this_interpreter(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    program = parse_command([str(script), "--lr", "3"], cwd=str(tmp_path))
    assert program.command == (sys.executable, str(script), "--lr", "3")
    assert program.entry == str(script)
    assert program.launcher is None
    assert program.root == str(tmp_path)


def test_torchrun_finds_the_script_after_launcher_options(tmp_path):
    (tmp_path / "train.py").write_text("print(1)\n")
    program = parse_command(["--", "torchrun", "--nproc-per-node", "2", "train.py", "--bs", "4"], cwd=str(tmp_path))
    assert program.launcher == "torchrun"
    assert program.entry == str(tmp_path / "train.py")
    assert program.command[-3:] == ("train.py", "--bs", "4")


def test_python_m_torch_distributed_run_is_a_launcher(tmp_path):
    (tmp_path / "train.py").write_text("print(1)\n")
    program = parse_command(
        ["python", "-m", "torch.distributed.run", "--nproc_per_node=2", "train.py"], cwd=str(tmp_path)
    )
    assert program.launcher == "torchrun"
    assert program.entry == str(tmp_path / "train.py")


def test_accelerate_launch(tmp_path):
    (tmp_path / "finetune.py").write_text("print(1)\n")
    program = parse_command(["accelerate", "launch", "--num_processes", "1", "finetune.py"], cwd=str(tmp_path))
    assert program.launcher == "accelerate"
    assert program.entry == str(tmp_path / "finetune.py")


def test_module_form_resolves_the_package_file_without_importing_it(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (package / "train.py").write_text("from pkg import model\n")
    (package / "model.py").write_text("import torch\n")
    program = parse_command(["python", "-u", "-m", "pkg.train"], cwd=str(tmp_path))
    assert program.module == "pkg.train"
    assert program.entry == str(package / "train.py")
    files = program_files(program)
    assert files == sorted(str(package / name) for name in ("__init__.py", "train.py", "model.py"))


def test_program_files_follow_local_imports_only(tmp_path):
    (tmp_path / "train.py").write_text("import os\nimport torch\nfrom models import net\nfrom . import utils\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "net.py").write_text("from .layers import Block\n")
    (tmp_path / "models" / "layers.py").write_text("Block = 1\n")
    (tmp_path / "unrelated.py").write_text("import torch\n")
    program = parse_command([str(tmp_path / "train.py")], cwd=str(tmp_path))
    names = [os.path.relpath(path, tmp_path) for path in program_files(program)]
    assert names == ["models/__init__.py", "models/layers.py", "models/net.py", "train.py"]


def test_missing_script_and_missing_module_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        parse_command(["nothere.py"], cwd=str(tmp_path))
    with pytest.raises(UsageError, match="cannot find module"):
        parse_command(["-m", "nothere.mod"], cwd=str(tmp_path))
    with pytest.raises(UsageError, match="needs a program"):
        parse_command(["--"], cwd=str(tmp_path))


def test_launcher_processes_are_recognised_and_ranks_are_not():
    assert is_launcher(["/usr/bin/python3", "/venv/bin/torchrun", "--nproc-per-node", "2", "train.py"])
    assert is_launcher(["python", "-m", "torch.distributed.run", "train.py"])
    assert is_launcher(["python", "/venv/bin/accelerate", "launch", "train.py"])
    assert not is_launcher(["python", "-u", "train.py", "--local-rank", "0"])
    assert not is_launcher(["python", "-m", "pkg.train"])


# -- message families (RULES.md section 3) ----------------------------------------------------
@pytest.mark.parametrize(
    "text, family, code",
    [
        ("mat1 and mat2 must have the same dtype, but got Float and Half", "dtype-mismatch", "DTL101"),
        ("mat1 and mat2 must have the same dtype, but got BFloat16 and Float", "dtype-mismatch", "DTL101"),
        ("expected scalar type Half but found Float", "dtype-mismatch", "DTL101"),
        ("Input type (float) and bias type (c10::Half) should be the same", "dtype-mismatch", "DTL101"),
        ("mixed dtype (CPU): expect parameter to have scalar type of Float", "dtype-mismatch", "DTL102"),
        ("RNN input dtype (torch.float32) does not match weight dtype (torch.float16)", "dtype-mismatch", "DTL101"),
        ("index_add_(): self (Half) and source (Float) must have the same scalar type", "index-dtype", "DTL104"),
        ("Found dtype Float but expected Half", "dtype-mismatch", "DTL101"),
        ("expected target dtype to be Long or Byte, but got Float", "int-dtype", "DTL106"),
        ("Attempting to unscale FP16 gradients.", "unscale-fp16", "DTL302"),
        (
            '"_amp_foreach_non_finite_check_and_unscale_cuda" not implemented for \'BFloat16\'',
            "bf16-unscale",
            "DTL301",
        ),
        ("No inf checks were recorded prior to update.", "scaler-state", "DTL305"),
        ("unscale_() has already been called on this optimizer since the last update().", "scaler-state", "DTL304"),
        ("value cannot be converted to type c10::Half without overflow", "half-overflow-literal", "DTL501"),
        ("Function 'SoftmaxBackward0' returned nan values in its 0th output.", "anomaly-nan", "DTL502"),
        (
            "attempting to assign a gradient with dtype 'c10::Half' to a tensor with grad_dtype 'Float'.",
            "grad-dtype",
            "DTL402",
        ),
        ("expected dtype c10::Half for `end` but got dtype float", "optimizer-state-dtype", "DTL403"),
        ("Detected mismatch between collectives on ranks. TensorDtypes=Float", "collective-mismatch", "DTL703"),
        ("Must flatten tensors with uniform dtype but got torch.float32 and torch.bfloat16", "fsdp-dtype", "DTL704"),
        ("Got unsupported ScalarType BFloat16", "numpy-bf16", "DTL604"),
        ("Current CUDA Device does not support bfloat16. Please switch dtype to float16.", "bf16-unsupported",
         "DTL203"),
    ],
)
def test_message_families(text, family, code):
    found = messages.classify(text)
    assert found is not None and found.name == family
    assert code in found.codes


def test_unrelated_errors_match_no_family():
    assert messages.classify("KeyError: 'labels'") is None
    assert messages.classify("CUDA out of memory. Tried to allocate 2.00 GiB") is None


# -- verdicts from evidence -------------------------------------------------------------------
def _finding(code, line, path="/p/train.py", end_line=None):
    return Finding(code, "name", "message", line, 1, end_line or line, 9, Confidence.HIGH, path=path)


def test_verdicts_from_claims_reach_and_device():
    findings = [
        _finding("DTL101", 10),  # the exception's stack passes through it
        _finding("DTL404", 5),  # an origin of a claim (the optimizer's construction)
        _finding("DTL303", 20),  # ran, nothing seen
        _finding("DTL305", 30),  # never ran
        _finding("DTL203", 3),  # CUDA-only, CPU run
        _finding("DTL102", 10),  # same line as DTL101 but a claim for other codes only would not do
    ]
    records = [
        {"kind": "start", "rank": 0, "pid": 1, "step": 0, "emulated": True, "cuda": False},
        {"kind": "claim", "what": "dtype-mismatch", "codes": ["DTL101"], "message": "m1", "rank": 0, "step": 0,
         "stack": [["/p/model.py", 4], ["/p/train.py", 10]], "origins": []},
        {"kind": "claim", "what": "nonfinite-params", "codes": ["DTL404"], "message": "nan", "rank": 0, "step": 1,
         "stack": [["/p/train.py", 12]], "origins": [["/p/train.py", 5]]},
        {"kind": "claim", "what": "mixed-dtype", "codes": ["DTL105"], "message": "add", "rank": 0, "step": 2,
         "stack": [["/p/train.py", 40]], "origins": []},
        {"kind": "reach", "path": "/p/train.py", "line": 20, "rank": 0, "pid": 1, "step": 0},
    ]
    verdicts, runtime_only, summary = decide(findings, records)
    assert [v.verdict for v in verdicts] == [
        "confirmed", "confirmed", "not reproduced", "not reached", "needs GPU", "not reproduced",
    ]
    assert verdicts[0].evidence[0]["message"] == "m1"
    assert summary.emulated and not summary.cuda
    assert [(v.line, v.what) for v in runtime_only] == [(40, "mixed-dtype")]


def test_claims_from_several_ranks_merge_and_collectives_are_compared():
    findings = [_finding("DTL703", 31), _finding("DTL703", 40)]
    records = [
        {"kind": "start", "rank": 0, "pid": 1, "step": 0, "emulated": True},
        {"kind": "start", "rank": 1, "pid": 2, "step": 0, "emulated": True},
        # Line 31 (the cast under `if rank == 0`) ran on rank 0 only; line 40 on both ranks.
        {"kind": "reach", "path": "/p/train.py", "line": 31, "rank": 0, "pid": 1, "step": 1},
        {"kind": "reach", "path": "/p/train.py", "line": 40, "rank": 0, "pid": 1, "step": 1},
        {"kind": "reach", "path": "/p/train.py", "line": 40, "rank": 1, "pid": 2, "step": 1},
        {"kind": "collective", "seq": 1, "op": "all_reduce", "dtypes": ["float64"], "rank": 0, "pid": 1, "step": 1,
         "stack": [["/p/train.py", 33]]},
        {"kind": "collective", "seq": 1, "op": "all_reduce", "dtypes": ["float32"], "rank": 1, "pid": 2, "step": 1,
         "stack": [["/p/train.py", 33]]},
    ]
    verdicts, runtime_only, summary = decide(findings, records)
    assert [v.verdict for v in verdicts] == ["confirmed", "not reproduced"]
    claim = verdicts[0].evidence[0]
    assert claim["ranks"] == [0, 1]
    assert claim["detail"]["dtypes"] == {"0": ["float64"], "1": ["float32"]}
    assert claim["origins"] == [["/p/train.py", 31]]
    assert summary.ranks == [0, 1] and not runtime_only


# -- the real CLI on bad input --------------------------------------------------------------------
DEPRECATED_SCALER = "scaler = torch.cuda.amp.GradScaler()\n"


def _write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def _confirm(*args, cwd=None):
    result = run_cli("confirm", "--quiet", "--device", "cpu", *args, cwd=cwd)
    assert "Traceback" not in result.stdout, result.stdout
    assert "dtype_lint/" not in result.stderr, result.stderr  # never a traceback of the companion
    return result


def test_missing_script_is_one_error_line_naming_it_as_given_and_exit_2(tmp_path):
    for given, cwd in ((str(tmp_path / "missing.py"), None), ("missing.py", tmp_path), ("/nonexistent/prog.py", None)):
        result = _confirm(given, cwd=cwd)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == f"dtype-lint: error: {given}: no such file or directory\n"


def test_syntax_error_is_not_run_and_exit_2(tmp_path):
    script = _write(tmp_path, "broken.py", "import torch\ndef f(:\n    pass\n")
    result = _confirm("--format", "json", str(script))
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["run"]["outcome"].startswith("could not start the program")
    assert "syntax error" in report["run"]["outcome"]
    assert [f["verdict"] for f in report["findings"]] == ["not run"]


def test_nonzero_exit_after_evidence_keeps_the_evidence(tmp_path):
    script = _write(
        tmp_path,
        "exits.py",
        f"""\
        import sys
        import torch
        {DEPRECATED_SCALER}
        sys.exit(3)
        """,
    )
    before = hashlib.sha256(script.read_bytes()).hexdigest()
    result = _confirm("--format", "json", str(script))
    report = json.loads(result.stdout)
    assert "exited with status 3" in report["run"]["outcome"]
    verdicts = {(f["code"], f["line"]): f["verdict"] for f in report["findings"]}
    assert verdicts[("DTL201", 3)] == "confirmed"
    assert result.returncode == 1
    assert hashlib.sha256(script.read_bytes()).hexdigest() == before  # the user's file is never written


def test_a_hang_times_out_and_keeps_what_was_seen(tmp_path):
    script = _write(
        tmp_path,
        "hangs.py",
        f"""\
        import time
        import torch
        {DEPRECATED_SCALER}
        while True:
            time.sleep(0.1)
        """,
    )
    result = _confirm("--timeout", "20", str(script))
    assert "timed out after" in result.stdout
    assert "DTL201 deprecated-amp-api  CONFIRMED" in result.stdout
    assert result.returncode == 1


def test_a_program_that_kills_itself_keeps_what_was_seen(tmp_path):
    script = _write(
        tmp_path,
        "kills.py",
        f"""\
        import os
        import signal
        import torch
        {DEPRECATED_SCALER}
        os.kill(os.getpid(), signal.SIGKILL)
        """,
    )
    result = _confirm("--format", "sarif", str(script))
    log = json.loads(result.stdout)
    jsonschema.validate(log, json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text()))
    run = log["runs"][0]
    assert "killed" in run["invocations"][0]["properties"]["confirm"]["outcome"]
    [result_] = [r for r in run["results"] if r["ruleId"] == "DTL201"]
    assert (result_["level"], result_["properties"]["verdict"]) == ("error", "confirmed")
    assert "is deprecated" in result_["properties"]["evidence"][0]["message"]


def test_not_reached_needs_gpu_stop_after_steps_and_module_form(tmp_path):
    package = tmp_path / "app"
    package.mkdir()
    (package / "__init__.py").write_text("")
    # A project whose users run torch < 2.3, where DTL203's bf16 refusal is real, and that has
    # torch.amp.autocast (2.0), DTL201's replacement (issue 21).
    (tmp_path / "requirements.txt").write_text("torch>=2.1,<2.3\n")
    _write(
        package,
        "train.py",
        """\
        import torch


        def never_called():
            return torch.cuda.amp.autocast()


        model = torch.nn.Linear(4, 1).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(1000):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(torch.randn(8, 4, device="cuda")).float().pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print("step", step)
        """,
    )
    result = _confirm(
        "--steps", "2", "--select", "DTL201,DTL203", "--format", "json", "--", "-m", "app.train", cwd=str(tmp_path)
    )
    report = json.loads(result.stdout)
    assert report["run"]["outcome"].startswith("stopped after 2 training iterations")
    assert report["run"]["emulated"] is True
    verdicts = [(f["code"], f["line"], f["verdict"]) for f in report["findings"]]
    # The bf16 capability check can only fail on a GPU: a CPU run cannot refute it.
    assert verdicts == [("DTL201", 5, "not reached"), ("DTL203", 11, "needs GPU")]
    assert result.returncode == 0


def test_device_cuda_without_cuda_cannot_start(tmp_path):
    script = _write(tmp_path, "t.py", "import torch\nprint(torch.ones(1))\n")
    result = run_cli("confirm", "--quiet", "--device", "cuda", str(script))
    if "ran on CUDA as written" in result.stdout:
        pytest.skip("this machine has CUDA")
    assert result.returncode == 2
    assert "--device cuda" in result.stdout


def test_scaler_updates_are_summarised_from_rank_0():
    records = [
        {"kind": "start", "rank": 0, "pid": 1, "step": 0, "emulated": False, "cuda": True},
        {"kind": "scaler-update", "rank": 0, "scale": 65536.0, "new_scale": 32768.0, "skipped": True},
        {"kind": "scaler-update", "rank": 0, "scale": 32768.0, "new_scale": 32768.0, "skipped": False},
        {"kind": "scaler-update", "rank": 1, "scale": 65536.0, "new_scale": 65536.0, "skipped": False},
    ]
    _, _, summary = decide([], records)
    assert (summary.scaler_updates, summary.skipped_steps, summary.scales) == (2, 1, (65536.0, 32768.0))
    assert summary.cuda and not summary.emulated


def test_bootstrap_runs_the_environments_own_sitecustomize(tmp_path):
    """Prepending our sitecustomize must not hide one the environment already had."""
    import subprocess

    from dtype_lint.runtime import protocol

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    marker = tmp_path / "marker"
    (theirs / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([protocol.BOOTSTRAP_DIR, str(theirs)]))
    env.pop(protocol.CONFIG_ENV, None)
    result = subprocess.run([sys.executable, "-c", "import sitecustomize; print(sitecustomize.__file__)"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert marker.read_text() == "ran"
    assert result.stdout.strip() == os.path.join(protocol.BOOTSTRAP_DIR, "sitecustomize.py")

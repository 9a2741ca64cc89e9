"""Run the program in a child process with the companion injected, and bring back the evidence.

Injection is a directory holding ``sitecustomize.py`` prepended to PYTHONPATH, plus one
environment variable naming a JSON config. Every Python process the program starts inherits both,
so every rank torchrun or accelerate spawns runs the companion too; the launchers themselves are
recognised and left alone.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from dtype_lint.runtime import processes, protocol
from dtype_lint.runtime.program import Program

# After a timeout: how long the program gets to die from SIGTERM before SIGKILL.
TERM_GRACE_S = 5.0
PROGRESS_EVERY_S = float(os.environ.get("DTYPE_LINT_CONFIRM_PROGRESS_S", "30"))


@dataclasses.dataclass
class RunResult:
    returncode: int | None  # None: never started
    timed_out: bool
    seconds: float
    records: list[dict[str, Any]]
    output_tail: list[str]
    start_error: str | None = None
    aborts: list[str] = dataclasses.field(default_factory=list)  # C++ ``what():`` messages
    interrupted: int | None = None  # the signal that stopped confirm itself (SIGTERM, SIGHUP, SIGINT)


# C++ aborts (a gloo enforce failing in one rank) never reach Python's excepthook: their
# ``what():`` line in the output is the only trace of the rank that failed first.
_ABORT_MARKER = "what():"
MAX_ABORTS = 4


def _pump(stream, tail: collections.deque, echo, aborts: list) -> None:
    for raw in iter(stream.readline, b""):
        text = raw.decode("utf-8", errors="replace")
        tail.append(text.rstrip("\n"))
        if _ABORT_MARKER in text and len(aborts) < MAX_ABORTS:
            aborts.append(text.split(_ABORT_MARKER, 1)[1].strip()[:500])
        if echo is not None:
            try:
                echo.write(text)
                echo.flush()
            except (OSError, ValueError):
                echo = None
    stream.close()


class Interrupted(Exception):
    """confirm itself got SIGTERM, SIGHUP or SIGINT while the program ran."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


STOP_SIGNALS = tuple(sig for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None), signal.SIGINT) if sig)


def _on_stop_signal(signum, frame):
    for sig in STOP_SIGNALS:  # the first signal wins; cleanup is not interrupted by the next
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signum)


def _catch_stop_signals() -> dict:
    """Turn confirm's own stop signals into Interrupted (main thread only): the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, _on_stop_signal) for sig in STOP_SIGNALS}


def _recorded_pids(evidence_dir: str) -> list[int]:
    """The pids the companion recorded at start (ranks a launcher put in sessions of their own)."""
    return [r["pid"] for r in protocol.read_evidence(evidence_dir)
            if r.get("kind") == "start" and isinstance(r.get("pid"), int)]


def _wait(process, timeout: float, started: float, evidence_dir: str, steps: int, progress) -> None:
    """Wait for the program; every PROGRESS_EVERY_S say how far it got (long runs look hung)."""
    while True:
        left = timeout - (time.monotonic() - started)
        if left <= 0:
            raise subprocess.TimeoutExpired(process.args, timeout)
        try:
            process.wait(timeout=min(left, PROGRESS_EVERY_S) if progress is not None else left)
            return
        except subprocess.TimeoutExpired:
            if progress is None or time.monotonic() - started >= timeout:
                continue
        records = protocol.read_evidence(evidence_dir)
        step = max((int(r.get("step", 0)) for r in records), default=0)
        claims = sum(1 for r in records if r.get("kind") == "claim")
        ranks = len({r.get("rank") for r in records if r.get("kind") == "start"})
        line = (f"dtype-lint confirm: {time.monotonic() - started:.0f}s, iteration {step} of {steps}, "
                f"{claims} defect{'' if claims == 1 else 's'} seen so far" + (f", {ranks} ranks" if ranks > 1 else "") + "\n")
        try:
            progress.write(line)
            progress.flush()
        except (OSError, ValueError):
            progress = None


def run_program(
    program: Program,
    *,
    flagged: dict[str, list[int]],
    steps: int,
    timeout: float,
    device: str,
    echo=sys.stderr,
    progress=None,
) -> RunResult:
    workdir = tempfile.mkdtemp(prefix="dtype-lint-confirm-")
    evidence_dir = os.path.join(workdir, "evidence")
    os.mkdir(evidence_dir)
    config_path = os.path.join(workdir, "config.json")
    protocol.write_config(
        config_path,
        {
            "evidence_dir": evidence_dir,
            "steps": steps,
            "device": device,
            "roots": [program.root],
            "flagged": flagged,
        },
    )
    env = dict(os.environ)
    env[protocol.CONFIG_ENV] = config_path
    paths = [protocol.BOOTSTRAP_DIR, protocol.PACKAGE_PARENT]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("PYTHONUNBUFFERED", "1")
    tail: collections.deque = collections.deque(maxlen=30)
    processes.adopt_orphans()
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            list(program.command),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as error:
        shutil.rmtree(workdir, ignore_errors=True)
        return RunResult(None, False, 0.0, [], [], start_error=f"cannot run {program.command[0]}: {error.strerror}")
    aborts: list[str] = []
    pump = threading.Thread(target=_pump, args=(process.stdout, tail, echo, aborts), daemon=True)
    pump.start()
    timed_out = False
    interrupted = None
    previous = _catch_stop_signals()
    try:
        try:
            _wait(process, timeout, started, evidence_dir, steps, progress)
        except subprocess.TimeoutExpired:
            timed_out = True
        except Interrupted as stop:
            interrupted = stop.signum
        seconds = time.monotonic() - started
        # Also after a normal exit: what the program left running (a daemon, a worker in a session
        # of its own) must not outlive the run, nor hold the output pipe open.
        processes.stop_all(process, TERM_GRACE_S, _recorded_pids(evidence_dir))
        pump.join(timeout=5)
        records = protocol.read_evidence(evidence_dir)
    except Interrupted as stop:  # a stop signal while cleaning up after the run
        interrupted = stop.signum
        processes.stop_all(process, 0.0, _recorded_pids(evidence_dir))
        seconds = time.monotonic() - started
        records = protocol.read_evidence(evidence_dir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return RunResult(process.returncode, timed_out, seconds, records, list(tail), aborts=aborts,
                     interrupted=interrupted)

"""``dtype-lint confirm [--] PROGRAM [ARGS]``: check the program, run it, give each finding a verdict.

Exit 1 when any defect was seen (a confirmed finding, a runtime-only one, or the program failing
on its own: a non-zero exit, a signal, an uncaught exception), 0 when none was, 2 when the
program could not be started, 128 + the signal when confirm itself got SIGTERM, SIGHUP or SIGINT
(it then stops every process the program started, removes its files and reports what it saw).
"""

from __future__ import annotations

import argparse
import os
import sys

from dtype_lint.commands.common import _codes, positive_int

FORMATS = ("text", "json", "sarif")
INSTALL_HINT = "pip install 'dtype-lint[runtime]'"


def _no_torch(companion_error: str) -> bool:
    return companion_error.startswith("ModuleNotFoundError") and "'torch'" in companion_error


class _Renderers(dict):
    """Format name -> renderer, imported on first use (no runtime modules for --help)."""

    def __missing__(self, name: str):
        from dtype_lint.runtime import render

        return {"text": render.render_text, "json": render.render_json, "sarif": render.render_sarif}[name]


RENDERERS = _Renderers()


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = "dtype-lint confirm [options] [--] PROGRAM [ARGS...]"
    parser.add_argument("--steps", type=positive_int, default=3,
                        help="training iterations to run, then stop: each optimizer steps at most this many times "
                             "(default 3; the run goes on while a GradScaler has skipped every step so far)")
    parser.add_argument(
        "--timeout", type=_seconds, default=600.0, help="seconds before the run is stopped (default 600)"
    )
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="cuda: run as written; cpu: run CUDA code on the CPU (emulated); auto: cuda if present")
    parser.add_argument("--format", "--output-format", dest="format", choices=FORMATS, default="text")
    parser.add_argument("--select", type=_codes, help="comma-separated rule codes or prefixes to enable")
    parser.add_argument("--ignore", type=_codes, help="comma-separated rule codes or prefixes to disable")
    parser.add_argument("--config", help="a pyproject.toml (or a TOML file holding the table)")
    parser.add_argument("--baseline", metavar="FILE",
                        help="findings recorded in FILE (dtype-lint check --write-baseline) are not reported, "
                             "nor is what the run sees of them")
    parser.add_argument("--quiet", action="store_true",
                        help="do not echo the program's output or progress lines to stderr")
    parser.add_argument("-o", "--output", "--output-file", dest="output",
                        help="write the report to this file instead of stdout")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="the program and its arguments")


def _static_check(program, args):
    """(files, findings, findings the baseline hides, settings)."""
    import os

    from dtype_lint.config import load_settings, with_overrides
    from dtype_lint.engine import check_files
    from dtype_lint.runtime.program import program_files
    from dtype_lint.runtime.verdicts import absolute
    from dtype_lint.targets import with_project_targets

    files = program_files(program)
    settings = load_settings(files[0] if files else program.root, args.config)
    settings = with_overrides(settings, select=args.select, ignore=args.ignore)
    # the program's files as one program, as ``check`` does: a checkpoint saved in one function (or
    # file) and loaded in another is a project finding (project/)
    # each file with the versions its project declares, as ``check`` reads them (targets.py)
    reports = check_files([(path, path) for path in files], settings, 1, project=True,
                          settings_for=lambda path: with_project_targets(settings, os.path.dirname(os.path.abspath(path))))
    all_findings = [absolute(f) for report in reports for f in report.findings]
    baseline = args.baseline or settings.baseline
    if not baseline:
        return files, all_findings, [], settings
    from dtype_lint.baseline import apply_baseline

    kept = {id(f) for report in apply_baseline(reports, baseline, settings).reports for f in report.findings}
    findings = [absolute(f) for report in reports for f in report.findings if id(f) in kept]
    hidden = [absolute(f) for report in reports for f in report.findings if id(f) not in kept]
    return files, findings, hidden, settings


def _outcome(result, summary, steps: int, explained: bool) -> tuple[str, list[str], bool]:
    """(one-line outcome, notes to show, whether to show the program's last output)."""
    from dtype_lint.wording import plural

    notes: list[str] = []
    if summary.scaler_updates:
        first, last = summary.scales
        notes.append(
            f"GradScaler (rank 0): {plural(summary.scaler_updates, 'update')}, {plural(summary.skipped_steps, 'step')} skipped for "
            f"inf/NaN gradients, loss scale {first:g} -> {last:g}"
        )
    if summary.companion_errors:
        notes.extend(f"companion could not fully install: {e}" for e in summary.companion_errors)
    from dtype_lint.runtime.messages import classify

    for text in result.aborts[:2]:
        family = classify(text)
        like = f" ({family.name}, like {'/'.join(family.codes[:3])})" if family else ""
        notes.append(f"a process aborted in C++: {text}{like}")
    for record in _telling_exceptions(summary.exceptions, explained or bool(result.aborts))[:3]:
        where = ""
        if record.get("stack"):
            path, line = record["stack"][0]
            from dtype_lint.runtime.render import display_path

            where = f" at {display_path(path)}:{line}"
        notes.append(f"rank {record.get('rank', 0)} raised {record['message']}{where}")
    took = f"{result.seconds:.1f}s"
    if result.interrupted:
        import signal

        return (f"confirm was stopped by {signal.Signals(result.interrupted).name} after {took}, and stopped the "
                "program with every process it started; verdicts use what was seen until then"), notes, False
    if result.timed_out:
        return f"timed out after {took}; verdicts use what was seen until then", notes, True
    if summary.stopped:
        return f"{summary.stopped} ({took})", notes, False
    if result.returncode == 0:
        if summary.steps_run >= steps:
            return f"the program finished after {summary.steps_run} training iterations ({took})", notes, False
        return f"the program finished after {summary.steps_run} of {steps} training iterations ({took})", notes, False
    if (result.returncode or 0) < 0:
        return f"the program was killed (signal {-result.returncode}) after {took}", notes, True
    if summary.terminated:
        return (f"the program exited with status {result.returncode} after {took}; some of its processes were "
                "terminated (a launcher stops the other ranks when one fails)"), notes, True
    return f"the program exited with status {result.returncode} after {took}", notes, True


# What the other ranks of a distributed run raise once one rank has failed: noise next to the cause.
_KNOCK_ON = ("Connection reset by peer", "Connection closed by peer", "Broken pipe", "Socket Timeout")


def _telling_exceptions(exceptions: list, explained: bool) -> list:
    """Exceptions worth a note: a rank's knock-on error only when nothing else explains the failure."""
    causes = [record for record in exceptions if not any(text in record["message"] for text in _KNOCK_ON)]
    return causes if causes or explained else exceptions


def _defect_seen(result, summary, verdicts, runtime_only) -> bool:
    """What CI gates on: a confirmed or runtime-only defect, or the program failing by itself."""
    if any(v.verdict == "confirmed" for v in verdicts) or runtime_only or result.aborts:
        return True
    if result.timed_out or summary.stopped:
        # Once confirm stops a rank, the others may fail on the broken connection: not a defect.
        return any(not any(text in r["message"] for text in _KNOCK_ON) for r in summary.exceptions)
    if summary.exceptions:
        return True
    return result.returncode not in (0, None)


def run(args: argparse.Namespace) -> int:
    if not args.output:
        return _run(args, sys.stdout)
    import io

    buffer = io.StringIO()
    status = _run(args, buffer)
    try:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(buffer.getvalue())
    except OSError as error:
        sys.stderr.write(f"dtype-lint confirm: cannot write {args.output}: {error.strerror}\n")
        return 2
    return status


def _run(args: argparse.Namespace, out) -> int:
    from dtype_lint.errors import UsageError
    from dtype_lint.runtime.launch import RunResult, run_program
    from dtype_lint.runtime.program import parse_command, torch_missing
    from dtype_lint.runtime.verdicts import decide, drop_ignored

    program = parse_command(args.program)  # a program that cannot be found: one line, exit 2
    interpreter = torch_missing(program)
    if interpreter is not None:
        raise UsageError(f"confirm runs the program with torch, which {interpreter} cannot import: {INSTALL_HINT}")
    files, findings, hidden, settings = _static_check(program, args)
    broken = [f for f in findings if f.code == "DTL001" and f.path == program.entry]
    if broken:
        return _cannot_start(args, program.display, f"{os.path.relpath(broken[0].path)}:{broken[0].line}: "
                             f"{broken[0].message}", out, findings)
    flagged: dict[str, list[int]] = {}
    for finding in findings:
        lines = flagged.setdefault(finding.path, [])
        lines.extend(range(finding.line, max(finding.end_line, finding.line) + 1))
    flagged = {path: sorted(set(lines)) for path, lines in sorted(flagged.items())}
    result: RunResult = run_program(
        program,
        flagged=flagged,
        steps=args.steps,
        timeout=args.timeout,
        device=args.device,
        echo=None if args.quiet else sys.stderr,
        progress=None if args.quiet else sys.stderr,
    )
    if result.start_error:
        return _cannot_start(args, program.display, result.start_error, out, findings)
    verdicts, runtime_only, summary = decide(findings, result.records, hidden)
    runtime_only = drop_ignored(runtime_only, settings)
    if summary.start_errors:
        return _cannot_start(args, program.display, summary.start_errors[0], out, findings)
    if summary.processes == 0 and not result.interrupted:
        reason = "the companion never started in the program (is it a Python program run with this interpreter?)"
        if summary.companion_errors:
            reason = f"the companion could not start in the program: {summary.companion_errors[0]}"
            if _no_torch(summary.companion_errors[0]):
                # The program's own traceback of `import torch` says nothing more.
                return _cannot_start(args, program.display, f"{reason} ({INSTALL_HINT})", out, findings)
        elif result.returncode not in (0, None):
            # Whether any of its code ran is unknown: only a started companion would have said.
            reason = (f"the program exited with status {result.returncode} and the companion never started in it "
                      "(is it run with another interpreter?)")
        return _cannot_start(args, program.display, reason, out, findings, result.output_tail)
    explained = bool(runtime_only) or any(v.evidence for v in verdicts)
    outcome, notes, show_tail = _outcome(result, summary, args.steps, explained)
    device_note = ""
    if summary.emulated and summary.cuda_used:
        device_note = ("ran on the CPU with CUDA emulated: .cuda()/device='cuda'/torch.accelerator/CUDA autocast and "
                       "GradScaler mapped to the CPU (CUDA autocast's float32 op list and its BCE error included); "
                       "CUDA-only effects "
                       "(bf16 capability, the bf16 unscale kernel, TF32) cannot show and are marked 'needs GPU'")
    elif summary.cuda:
        device_note = "ran on CUDA as written"
    run_info = {
        "command": program.display,
        "outcome": outcome,
        "returncode": result.returncode,
        "timed_out": result.timed_out,
        "seconds": round(result.seconds, 2),
        "steps": args.steps,
        "emulated": summary.emulated,
        "cuda": summary.cuda,
        "ranks": summary.ranks,
        "processes": summary.processes,  # instrumented ones: launchers are left alone
        "files_checked": [os.path.relpath(path) for path in files],
        "device_note": device_note,
        "notes": notes,
        "scaler": {"updates": summary.scaler_updates, "skipped_steps": summary.skipped_steps,
                   "scales": list(summary.scales) if summary.scales else None},
        "output_tail": result.output_tail,
        # The program's own last lines help only when no evidence explains how it ended.
        "show_tail": show_tail and not summary.exceptions and not runtime_only
        and not any(v.evidence for v in verdicts),
        "steps_run": summary.steps_run,
        "failed": bool(summary.exceptions)
        or (result.returncode not in (0, None) and not result.timed_out and not result.interrupted),
    }
    if result.interrupted:
        # What was seen is still reported; the exit status says confirm was stopped (128 + signal).
        try:
            RENDERERS[args.format](run_info, verdicts, runtime_only, out)
            out.flush()
        except OSError:
            pass  # SIGHUP: the terminal may be gone
        return 128 + result.interrupted
    RENDERERS[args.format](run_info, verdicts, runtime_only, out)
    return 1 if _defect_seen(result, summary, verdicts, runtime_only) else 0


def _cannot_start(args, command: str, reason: str, out, findings=(), tail=()) -> int:
    from dtype_lint.runtime.verdicts import NOT_RUN, Verdict

    verdicts = [Verdict(f, NOT_RUN, [], "the program did not start") for f in findings]
    run_info = {
        "command": command,
        "outcome": f"could not start the program: {reason}",
        "returncode": None,
        "started": False,
        "notes": [],
        "output_tail": list(tail),
        "show_tail": bool(tail),
    }
    RENDERERS[args.format](run_info, verdicts, [], out)
    return 2

"""``dtype-lint confirm`` on real training programs with planted defects (confirm_programs/).

For each program: is the planted defect shown (its rule confirmed, or seen runtime-only), is the
clean copy (``--fixed``) clean (nothing confirmed, nothing runtime-only, exit 0), and what the
clean copy's whole run costs under confirm against the same run under autograd anomaly mode
(``_with_anomaly.py``). Times are wall-clock of the whole run, interpreter and imports included,
one run each (quote ratios, not seconds: the machine is shared). The plain and anomaly runs use
each program's own CPU fallback (fp16 AMP only where CUDA is available), so under confirm the
program does the emulated-CUDA fp16 work the GPU run would.

    python benchmarks/confirm_table.py [--only NAME] [--markdown OUT.md]

Needs transformers and accelerate for the HF Trainer and accelerate rows (skipped without them).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join("benchmarks", "confirm_programs")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]

# name, script, planted defect's code, launcher prefix (None: one process), modules it needs
PROGRAMS = (
    ("nanoGPT-style", "nanogpt.py", "DTL404", None, ()),
    ("HF Trainer (tiny Llama)", "hf_trainer.py", "DTL302", None, ("transformers",)),
    ("accelerate loop", "accelerate_train.py", "DTL303", None, ("accelerate",)),
    ("DDP, 2 ranks (torchrun)", "ddp_train.py", "DTL703", TORCHRUN, ()),
)


def _timed(command: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - started, result


def _confirm(launcher, script, *args) -> tuple[float, int, dict]:
    program = (launcher or [sys.executable]) + [script, *args]
    seconds, result = _timed([sys.executable, "-m", "dtype_lint", "confirm", "--quiet", "--steps", "50",
                              "--timeout", "600", "--format", "json", "--", *program])
    try:
        return seconds, result.returncode, json.loads(result.stdout)
    except ValueError:
        raise SystemExit(f"confirm printed no report for {program}:\n{result.stderr[-2000:]}") from None


def _shown(report: dict, code: str) -> bool:
    confirmed = any(f["code"] == code and f["verdict"] == "confirmed" for f in report["findings"])
    return confirmed or any(code in row["related_codes"] for row in report["runtime_only"])


def _clean(report: dict, returncode: int) -> bool:
    return (returncode == 0 and not report["runtime_only"]
            and all(f["verdict"] != "confirmed" for f in report["findings"]))


def measure(name, script, code, launcher) -> dict:
    path = os.path.join(HERE, script)
    _, defect_rc, defect = _confirm(launcher, path)
    confirm_s, clean_rc, clean = _confirm(launcher, path, "--fixed")
    runner = launcher or [sys.executable]
    plain_s, plain = _timed(runner + [path, "--fixed"])
    anomaly_s, anomaly = _timed(runner + [os.path.join(HERE, "_with_anomaly.py"), path, "--fixed"])
    for label, result in (("plain", plain), ("anomaly", anomaly)):
        if result.returncode != 0:
            raise SystemExit(f"{name}: the {label} run failed:\n{result.stderr[-2000:]}")
    evidence = [e["message"] for f in defect["findings"] if f["code"] == code for e in f["evidence"]]
    evidence += [row["message"] for row in defect["runtime_only"] if code in row["related_codes"]]
    return {
        "program": name,
        "defect": code,
        "shown": _shown(defect, code),
        "evidence": evidence[0][:140] if evidence else "",
        "defect_exit": defect_rc,
        "clean_copy_clean": _clean(clean, clean_rc),
        "clean_outcome": clean["run"]["outcome"],
        "plain_s": round(plain_s, 1),
        "anomaly_s": round(anomaly_s, 1),
        "confirm_s": round(confirm_s, 1),
        "confirm_vs_anomaly": round(confirm_s / anomaly_s, 2),
    }


def markdown(rows: list[dict]) -> str:
    lines = [
        "| program | planted | shown | exit | clean copy clean | plain s | anomaly s | confirm s | confirm / anomaly |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['program']} | {row['defect']} | {'yes' if row['shown'] else 'NO'} | {row['defect_exit']} | "
            f"{'yes' if row['clean_copy_clean'] else 'NO'} | {row['plain_s']} | {row['anomaly_s']} | "
            f"{row['confirm_s']} | {row['confirm_vs_anomaly']}x |"
        )
    lines.append("")
    lines.extend(f"- {row['program']}: {row['evidence']}" for row in rows if row["evidence"])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only the program whose name contains this")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    rows = []
    for name, script, code, launcher, needs in PROGRAMS:
        if args.only and args.only.lower() not in name.lower():
            continue
        missing = [module for module in needs if importlib.util.find_spec(module) is None]
        if missing:
            print(f"skipping {name}: needs {', '.join(missing)}", file=sys.stderr)
            continue
        rows.append(measure(name, script, code, launcher))
        print(json.dumps(rows[-1]), file=sys.stderr)
    table = markdown(rows)
    print(table)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(table)


if __name__ == "__main__":
    main()

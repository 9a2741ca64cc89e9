"""Is the time and memory of checking one file linear in its size?

    python benchmarks/linearity.py              # the corpus of benchmarks/corpus.py
    python benchmarks/linearity.py --quick      # one timing per file instead of the best of two

Targets (issue 24): the 10 largest files of the corpus take at most 3x the time per byte of the
median file, and checking a 1 MB file of real code peaks at most 300 MB of resident memory.

What is measured, each file alone, as ``dtype-lint check --no-cache`` checks it (prefilter, every
rule, and the project pass's summary of the file; not the cross-file re-check, which depends on
the other files):
- **time per byte**: CPU time of ``engine.check_file`` (user + system of this process, so the other
  processes of a shared machine do not count), best of ``--repeat``, divided by the file's size.
  "The median file" is the median of the time per byte of the 21 files nearest the corpus's
  median size (one file alone is too noisy a yardstick).
- **peak RSS of a 1 MB file**: a fresh process checks a file of about 1 MB made by concatenating
  real corpus files (their ``from __future__`` lines dropped, so it compiles); its peak resident
  memory is ``VmHWM`` of /proc/self/status, the interpreter and the rules' imports included. The same process's
  peak after checking an empty file is printed too (the floor nothing here can lower).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import ensure_corpus, python_files  # noqa: E402

TARGET_RATIO = 3.0
TARGET_PEAK_MIB = 300
MEGABYTE = 1_000_000

# Run in a fresh process: checks one file and prints its CPU time and the process's peak RSS.
ONE_FILE = r"""
import json, resource, sys, time
from dtype_lint.config import Settings
from dtype_lint.engine import check_file
path = sys.argv[1]
start = time.process_time()
report = check_file(path, path, Settings(), summarize=True)
cpu = time.process_time() - start
try:  # VmHWM: this process's own peak (Linux keeps ru_maxrss across exec: the parent's would count)
    status = open("/proc/self/status").read()
    peak = int(status.split("VmHWM:")[1].split()[0]) / 1024
except (OSError, IndexError):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"cpu": cpu, "peak_mib": peak, "findings": len(report.findings),
                  "errors": report.internal_errors}))
"""


def cpu_time_of(path: Path, repeat: int) -> float:
    from dtype_lint.config import Settings
    from dtype_lint.engine import check_file

    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        report = check_file(str(path), str(path), Settings(), summarize=True)
        best = min(best, time.process_time() - start)
        if report.internal_errors:
            raise SystemExit(f"{path}: {report.internal_errors[0]}")
    return best


def one_megabyte_file(files: list[Path], target: Path) -> int:
    """Real code, about 1 MB: corpus files of middling size concatenated, each kept only if the
    whole still compiles. Deterministic: the same corpus gives the same file."""
    by_size = sorted(files, key=lambda path: (path.stat().st_size, str(path)))
    middle = by_size[len(by_size) // 4: 3 * len(by_size) // 4]  # no tiny __init__.py, no giant
    parts: list[str] = []
    size = 0
    for path in middle:
        text = re.sub(r"^from __future__ import .*$", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        parts.append(text)
        size += len(text.encode("utf-8"))
        if size >= MEGABYTE:
            break
    data = "\n".join(parts)
    target.write_text(data, encoding="utf-8")
    return len(data.encode("utf-8"))


def in_fresh_process(path: Path) -> dict:
    result = subprocess.run([sys.executable, "-c", ONE_FILE, str(path)], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one timing per file (default: best of two)")
    parser.add_argument("--largest", type=int, default=10, help="how many of the largest files (default 10)")
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else 2

    files = [path for path in python_files(ensure_corpus()) if path.stat().st_size > 0]
    by_size = sorted(files, key=lambda path: (path.stat().st_size, str(path)))
    middle = len(by_size) // 2
    median_sample = by_size[middle - 10: middle + 11]
    largest = by_size[-args.largest:][::-1]

    cpu_time_of(median_sample[0], 1)  # warm-up: imports and the rules' first use
    median_rates = [cpu_time_of(path, repeat) / path.stat().st_size for path in median_sample]
    median_rate = statistics.median(median_rates)
    print(f"corpus: {len(files)} files; median size {by_size[middle].stat().st_size:,} bytes")
    print(f"median file: {median_rate * 1e6:.2f} µs of CPU per byte"
          f" (median of the {len(median_sample)} files nearest the median size)")
    print()
    print("| file | size | CPU time | µs/byte | x median |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for path in largest:
        size = path.stat().st_size
        cpu = cpu_time_of(path, repeat)
        ratio = cpu / size / median_rate
        worst = max(worst, ratio)
        name = "/".join(path.parts[-3:])
        print(f"| {name} | {size / 1000:,.0f} KB | {cpu:.2f} s | {cpu / size * 1e6:.2f} | {ratio:.2f} |", flush=True)

    with tempfile.TemporaryDirectory() as scratch:
        big = Path(scratch, "one_megabyte.py")
        size = one_megabyte_file(files, big)
        measured = in_fresh_process(big)
        empty = Path(scratch, "empty.py")
        empty.write_text("import torch\n")
        floor = in_fresh_process(empty)
    big_ratio = measured["cpu"] / size / median_rate
    print()
    print(f"1 MB file of corpus code ({size:,} bytes): {measured['cpu']:.2f} s CPU"
          f" ({big_ratio:.2f}x the median's time per byte), peak RSS {measured['peak_mib']:.0f} MiB"
          f" (a one-line file: {floor['peak_mib']:.0f} MiB); {measured['findings']} findings")
    if measured["errors"]:
        print(f"internal errors: {measured['errors']}")
    print()
    time_ok = worst <= TARGET_RATIO and big_ratio <= TARGET_RATIO
    memory_ok = measured["peak_mib"] <= TARGET_PEAK_MIB
    print(f"time per byte, largest files and the 1 MB file <= {TARGET_RATIO:g}x median:"
          f" {'yes' if time_ok else 'NO'} (worst {max(worst, big_ratio):.2f}x)")
    print(f"peak RSS of the 1 MB file <= {TARGET_PEAK_MIB} MiB: {'yes' if memory_ok else 'NO'}"
          f" ({measured['peak_mib']:.0f} MiB)")
    return 0 if time_ok and memory_ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Cold check against the bare libcst parse of the same files, measured in one paired run.

    python benchmarks/paired.py                        # the corpus of benchmarks/corpus.py
    python benchmarks/paired.py --tree benchmarks/corpus/timm-1.0.31/timm --warm
    python benchmarks/paired.py --tree ../Megatron-LM --jobs 2 --memory-only

The ratio compares **CPU time** (user + system of every process a command starts, pool workers
included), so both sides count the same work whatever the number of processes: the bare parse
runs in one process, the check with ``--jobs`` workers (default 1). On a shared machine whose
speed drifts within minutes, wall time says more about the other jobs than about ours; CPU time
drifts too (caches, frequency), so the two commands alternate and the minima are compared.

- ``--tree DIR`` (repeatable): measure these trees instead of the corpus; each runs from its
  parent directory with an empty config, so only dtype-lint's defaults apply.
- ``--warm``: also fill a cache and re-run on it (warm / cold, CPU and wall).
- ``--compare-project``: also the cold check with ``--no-project`` (the cost of the project pass).
- ``--memory-only``: the cold check alone (no bare parse), for its peak RSS per process.
- ``--also DIR``: also time the cold check of another copy of the analyzer (a directory holding a
  ``dtype_lint`` package, e.g. ``git archive main dtype_lint | tar -x -C DIR``), run with
  ``PYTHONPATH=DIR`` in the same alternation: before/after figures from one run.

Peak RSS is that of the largest single process a command started (the main process or a worker).
Uses the files dtype-lint's own discovery finds; the bare parse reads the same list.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import BARE_PARSE, WORK, discovered_files, dtype_lint_env, measure  # noqa: E402
from corpus import CORPUS, ensure_corpus  # noqa: E402


def _trees(options) -> tuple[Path, list[str]]:
    """The working directory the commands run in, and the trees named from there."""
    if not options.tree:
        return CORPUS, [path.name for path in ensure_corpus()]
    paths = [Path(tree).resolve() for tree in options.tree]
    for path in paths:
        if not path.is_dir():
            raise SystemExit(f"--tree {path}: not a directory")
    parents = {path.parent for path in paths}
    if len(parents) > 1:
        raise SystemExit("--tree: give trees that share one parent directory")
    return parents.pop(), [path.name for path in paths]


def _mib(figures: dict) -> str:
    return f"{figures['peak_kib'] / 1024:.0f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tree", action="append", help="a directory to measure (repeatable); default: the corpus")
    parser.add_argument("--jobs", type=int, default=1, help="dtype-lint's worker processes (default 1)")
    parser.add_argument("--warm", action="store_true", help="also fill a cache, then time a warm re-run")
    parser.add_argument("--compare-project", action="store_true",
                        help="also time the cold check with --no-project (no whole-program pass)")
    parser.add_argument("--memory-only", action="store_true", help="only the cold check, for its peak RSS")
    parser.add_argument("--also", type=Path, help="a directory holding another dtype_lint package to time too")
    options = parser.parse_args()
    if options.rounds < 1 or options.jobs < 1:
        raise SystemExit("--rounds and --jobs must be at least 1")
    cwd, trees = _trees(options)
    WORK.mkdir(exist_ok=True)
    config, file_list = WORK / "bench-config.toml", WORK / "paired-files.txt"
    config.write_text("# empty: the default settings\n")
    cache = WORK / "cache-paired"
    env = dtype_lint_env(cache)
    files = discovered_files(trees, env, config, cwd=cwd)
    file_list.write_text("\n".join(files))
    size = sum((cwd / name).stat().st_size for name in files)
    print(f"{len(files)} files, {size / 1e6:.1f} MB under {', '.join(trees)} (from {cwd}); "
          f"check --jobs {options.jobs}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    lint = [sys.executable, "-m", "dtype_lint", "check", "--config", str(config), "--format", "json",
            "--exit-zero", "--jobs", str(options.jobs)]
    bare_parse = [sys.executable, "-c", BARE_PARSE, str(file_list)]
    runs: dict[str, list[dict]] = {}
    for index in range(options.rounds):
        steps = [("cold", [*lint, "--no-cache", *trees])]
        if not options.memory_only:
            steps.insert(0, ("bare", bare_parse))
        if options.also:
            steps.append(("also", [*lint, "--no-cache", *trees]))
        if options.compare_project:
            steps.append(("no-project", [*lint, "--no-cache", "--no-project", *trees]))
        if options.warm:
            shutil.rmtree(cache, ignore_errors=True)
            steps += [("fill", [*lint, *trees]), ("warm", [*lint, *trees])]
        for name, command in steps:
            step_env = env if name != "also" else {**env, "PYTHONPATH": str(options.also.resolve())}
            runs.setdefault(name, []).append(measure(command, cwd=cwd, env=step_env, label=f"paired-{name}-{index}"))
        cold = runs["cold"][-1]
        if cold["rc"] != 0:
            raise SystemExit(f"the cold check failed (rc {cold['rc']}): see {cold['stderr']}")
        if options.warm and runs["warm"][-1]["stdout"].read_bytes() != cold["stdout"].read_bytes():
            raise SystemExit("the warm and cold runs differ")

    def best(name: str, what: str) -> float:
        return min(run[what] for run in runs[name])

    cold_cpu = best("cold", "cpu")
    print(f"cold check: {cold_cpu:.2f} s CPU (min of {options.rounds}), {best('cold', 'wall'):.2f} s wall, "
          f"largest process {_mib(max(runs['cold'], key=lambda run: run['peak_kib']))}")
    if "bare" in runs:
        bare_cpu = best("bare", "cpu")
        print(f"bare libcst parse: {bare_cpu:.2f} s CPU, peak {_mib(runs['bare'][0])}")
        print(f"cold / bare parse (CPU, ratio of the minima): {cold_cpu / bare_cpu:.3f}")
        for index, (bare, cold) in enumerate(zip(runs["bare"], runs["cold"])):
            print(f"  round {index}: {cold['cpu'] / bare['cpu']:.3f} (wall {cold['wall'] / bare['wall']:.3f})")
    if "also" in runs:
        also = best("also", "cpu")
        print(f"--also {options.also}: cold {also:.2f} s CPU, largest process "
              f"{_mib(max(runs['also'], key=lambda run: run['peak_kib']))}"
              + (f"; cold / bare parse {also / best('bare', 'cpu'):.3f}" if "bare" in runs else "")
              + f"; this copy / that one {cold_cpu / also:.3f}")
    if "no-project" in runs:
        local = best("no-project", "cpu")
        print(f"--no-project: {local:.2f} s CPU; the project pass costs {cold_cpu / local:.3f}x the file-local check")
    if options.warm:
        print(f"warm re-run: {best('warm', 'cpu'):.2f} s CPU, {best('warm', 'wall'):.2f} s wall; "
              f"warm / cold {100 * best('warm', 'cpu') / cold_cpu:.1f} % CPU, "
              f"{100 * best('warm', 'wall') / best('cold', 'wall'):.1f} % wall "
              f"(filling the cache: {best('fill', 'cpu'):.2f} s CPU)")


if __name__ == "__main__":
    main()

"""Speed and memory of ``dtype-lint check`` on real trees, measured against a bare libcst parse.

    python benchmarks/bench.py                  # everything, TorchFix on timm only
    python benchmarks/bench.py --torchfix-scope all
    python benchmarks/bench.py --skip-torchfix --verify-prefilter

All figures come from one run, so the ratios compare like with like on a shared, noisy machine.
Each command runs in a fresh process under a small wrapper that reports its wall time and the
peak resident memory of the largest process it started (main process or pool worker).

Measured:
- bare libcst: ``libcst.parse_module`` on every file, one process, nothing else (the baseline);
- cold ``dtype-lint check --no-cache`` at the default number of jobs, and with ``--jobs 1``;
- the cache: a run that fills an empty cache, then a warm re-run of the same command;
- ``dtype-lint --version`` and a pre-commit-sized run (5 files, no cache);
- TorchFix (installed into its own venv under benchmarks/.work/) on the same files.

The corpus is the pinned sdists of ``benchmarks/corpus.py``; it is git-ignored, so corpus.py marks
it as a work tree of its own (an empty ``.git`` folder) to keep the enclosing repository's ignore
rules out of discovery, and the checks run with an empty config file so that this project's own
``[tool.dtype-lint]`` does not apply.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / ".work"
sys.path.insert(0, str(HERE))

from corpus import CORPUS, ensure_corpus  # noqa: E402

# Runs a command; prints its wall time, the CPU time (user + system) of every process it started
# (pool workers included: they are waited for), and the peak RSS (KiB) of the largest one.
WRAPPER = r"""
import json, resource, subprocess, sys, time
out, err = open(sys.argv[1], "wb"), open(sys.argv[2], "wb")
start = time.perf_counter()
code = subprocess.run(sys.argv[3:], stdout=out, stderr=err).returncode
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rc": code, "peak_kib": usage.ru_maxrss}))
"""

# The baseline: parse every file with libcst, one process, and nothing else.
BARE_PARSE = r"""
import json, sys, time
import libcst
paths = open(sys.argv[1], encoding="utf-8").read().split("\n")
per_tree, failures = {}, 0
for path in paths:
    start = time.perf_counter()
    try:
        with open(path, "rb") as handle:
            libcst.parse_module(handle.read())
    except Exception:
        failures += 1
    tree = path.split("/", 1)[0]
    per_tree[tree] = per_tree.get(tree, 0.0) + time.perf_counter() - start
print(json.dumps({"per_tree": per_tree, "failures": failures}))
"""


def measure(command: list[str], *, cwd: Path, env: dict[str, str], label: str) -> dict:
    WORK.mkdir(exist_ok=True)
    stdout, stderr = WORK / f"{label}.out", WORK / f"{label}.err"
    result = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(stdout), str(stderr), *command],
        cwd=cwd, env=env, capture_output=True, text=True, check=True,
    )
    figures = json.loads(result.stdout)
    figures["stdout"], figures["stderr"] = stdout, stderr
    print(f"  {label:<24} {figures['wall']:8.2f} s   cpu {figures['cpu']:8.2f} s   "
          f"peak {figures['peak_kib'] / 1024:7.1f} MiB   rc {figures['rc']}", flush=True)
    return figures


def dtype_lint_env(cache_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_CEILING_DIRECTORIES"] = str(CORPUS)
    env["DTYPE_LINT_CACHE_DIR"] = str(cache_dir)
    env.pop("PYTHONHASHSEED", None)
    return env


def discovered_files(trees: list[str], env: dict[str, str], config: Path, cwd: Path = CORPUS) -> list[str]:
    """The files dtype-lint checks, as its own discovery finds them (display paths)."""
    script = (
        "import sys, json\n"
        "from dtype_lint.config import load_settings\n"
        "from dtype_lint.discover import discover\n"
        f"settings = load_settings('.', {str(config)!r})\n"
        "print(json.dumps([display for display, _ in discover(sys.argv[1:], settings)]))\n"
    )
    result = subprocess.run([sys.executable, "-c", script, *trees], cwd=cwd, env=env,
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def prefilter_counts(files: list[str]) -> tuple[int, Counter]:
    """How many files the prefilter sends to libcst, and on how many each rule runs."""
    from dtype_lint.config import Settings
    from dtype_lint.engine import enabled_rules
    from dtype_lint.prefilter import rules_for, words_of_source

    settings = Settings()
    passed, hits = 0, Counter()
    for display in files:
        words = words_of_source((CORPUS / display).read_text(encoding="utf-8", errors="replace"))
        if words is None:
            continue  # DTL001, no rule runs
        running = rules_for(words, enabled_rules(settings, display))
        passed += bool(running)
        hits.update(rule.code for rule in running)
    return passed, hits


def verify_prefilter(files: list[str]) -> tuple[int, int]:
    """Findings with and without the prefilter over the whole corpus; they must be identical."""
    from dtype_lint.config import Settings
    from dtype_lint.engine import check_files

    pairs = [(display, str(CORPUS / display)) for display in files]
    with_filter = check_files(pairs, Settings(), prefilter=True)
    without = check_files(pairs, Settings(), prefilter=False)
    a = [f.to_json() for r in with_filter for f in r.findings]
    b = [f.to_json() for r in without for f in r.findings]
    if a != b:
        raise SystemExit(f"PREFILTER DROPPED FINDINGS: {len(a)} with it, {len(b)} without")
    return len(a), len(b)


def torchfix_binary() -> Path | None:
    venv = WORK / "torchfix-venv"
    binary = venv / "bin" / "torchfix"
    if binary.exists():
        return binary
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "torchfix"], check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"  TorchFix could not be installed: {error}")
        return None
    return binary if binary.exists() else None


def summarize_findings(path: Path) -> tuple[int, Counter]:
    data = json.loads(path.read_text() or "[]")
    return len(data), Counter(item["code"] for item in data)


def version_time(command: list[str], env: dict[str, str], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-torchfix", action="store_true")
    parser.add_argument("--torchfix-scope", choices=("timm", "all"), default="timm",
                        help="TorchFix is ~8x slower than a parse: timm only by default")
    parser.add_argument("--verify-prefilter", action="store_true",
                        help="also check in-process that prefiltered and unfiltered findings are identical")
    parser.add_argument("--stride", type=int, default=1,
                        help="measure every Nth file only (a loaded machine); the files are then passed by name")
    parser.add_argument("--json", type=Path, default=WORK / "last-run.json")
    options = parser.parse_args()

    trees = [path.name for path in ensure_corpus()]
    WORK.mkdir(exist_ok=True)
    config = WORK / "bench-config.toml"
    config.write_text("# empty: the default settings\n")
    cache_dir = WORK / "cache"
    shutil.rmtree(cache_dir, ignore_errors=True)
    env = dtype_lint_env(cache_dir)
    files = discovered_files(trees, env, config)[:: options.stride]
    # With a stride the tools get the chosen files by name instead of the trees.
    targets = trees if options.stride == 1 else files
    file_list = WORK / "files.txt"
    file_list.write_text("\n".join(files))
    size = sum((CORPUS / f).stat().st_size for f in files)
    timm = next(tree for tree in trees if tree.startswith("timm-"))
    results: dict = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores, "
                   f"{platform.platform()}, Python {platform.python_version()}",
        "corpus": {tree: len([f for f in files if f.startswith(tree + "/")]) for tree in trees},
        "files": len(files),
        "stride": options.stride,
        "megabytes": round(size / 1e6, 1),
        "loadavg_start": loadavg(),
    }
    print(f"{len(files)} files, {size / 1e6:.1f} MB; load average {results['loadavg_start']}", flush=True)

    passed, hits = prefilter_counts(files)
    results["prefilter_passed"] = passed
    results["prefilter_hits_by_rule"] = dict(sorted(hits.items()))
    print(f"  prefilter: {passed}/{len(files)} files go to libcst", flush=True)

    lint = [sys.executable, "-m", "dtype_lint", "check", "--config", str(config), "--format", "json", "--exit-zero"]
    bare = measure([sys.executable, "-c", BARE_PARSE, str(file_list)], cwd=CORPUS, env=env, label="bare-libcst")
    bare_details = json.loads(bare["stdout"].read_text())
    cold = measure([*lint, "--no-cache", *targets], cwd=CORPUS, env=env, label="cold-no-cache")
    serial = measure([*lint, "--no-cache", "--jobs", "1", *targets], cwd=CORPUS, env=env, label="cold-jobs-1")
    fill = measure([*lint, *targets], cwd=CORPUS, env=env, label="cold-fill-cache")
    warm = measure([*lint, *targets], cwd=CORPUS, env=env, label="warm-cache")
    if warm["stdout"].read_bytes() != cold["stdout"].read_bytes():
        raise SystemExit("warm and cold runs differ")
    if serial["stdout"].read_bytes() != cold["stdout"].read_bytes():
        raise SystemExit("--jobs 1 and default jobs differ")

    # Pre-commit passes the changed files: five mid-sized files that do need a libcst parse.
    from dtype_lint.config import Settings
    from dtype_lint.engine import enabled_rules, might_match

    candidates = sorted(
        (f for f in files if might_match((CORPUS / f).read_text(encoding="utf-8", errors="replace"),
                                         enabled_rules(Settings(), f))),
        key=lambda f: (CORPUS / f).stat().st_size,
    )
    middle = len(candidates) // 2
    five = candidates[max(0, middle - 2): middle + 3] or files[:5]
    small = measure([*lint, "--no-cache", *five], cwd=CORPUS, env=env, label="pre-commit-5-files")
    version_module = version_time([sys.executable, "-m", "dtype_lint", "--version"], env)
    script = shutil.which("dtype-lint") or str(Path(sys.executable).with_name("dtype-lint"))
    version_script = version_time([script, "--version"], env)
    python_alone = version_time([sys.executable, "-c", "pass"], env)
    print(f"  --version: {version_script:.3f} s (console script), {version_module:.3f} s (python -m); "
          f"bare interpreter start {python_alone:.3f} s", flush=True)

    findings, by_code = summarize_findings(cold["stdout"])
    internal_errors = [line for line in cold["stderr"].read_text().splitlines() if "internal error" in line]
    results.update(
        bare_parse_s=bare["wall"], bare_parse_failures=bare_details["failures"],
        bare_parse_per_tree_s=bare_details["per_tree"], bare_peak_mib=bare["peak_kib"] / 1024,
        cold_s=cold["wall"], cold_peak_mib=cold["peak_kib"] / 1024, cold_rc=cold["rc"],
        jobs1_s=serial["wall"], jobs1_peak_mib=serial["peak_kib"] / 1024,
        fill_cache_s=fill["wall"], warm_s=warm["wall"], warm_peak_mib=warm["peak_kib"] / 1024,
        five_files=five, five_files_s=small["wall"],
        version_script_s=version_script, version_module_s=version_module, python_start_s=python_alone,
        findings=findings, findings_by_code=dict(sorted(by_code.items())), internal_errors=len(internal_errors),
        jobs_default=os.cpu_count(),
    )

    if options.verify_prefilter:
        with_filter, without = verify_prefilter(files)
        results["prefilter_verified_findings"] = with_filter
        print(f"  prefilter verified: {with_filter} findings with and {without} without", flush=True)

    if not options.skip_torchfix:
        binary = torchfix_binary()
        if binary is not None:
            scope = trees if options.torchfix_scope == "all" else [timm]
            if options.stride > 1:  # the same subset as everything else
                scope = files
            tf = measure([str(binary), *scope], cwd=CORPUS, env=env, label=f"torchfix-{options.torchfix_scope}")
            ours = cold if options.torchfix_scope == "all" or options.stride > 1 else measure(
                [*lint, "--no-cache", timm], cwd=CORPUS, env=env, label="cold-no-cache-timm")
            tf_version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
            results.update(
                torchfix_version=tf_version, torchfix_scope=scope, torchfix_s=tf["wall"],
                torchfix_peak_mib=tf["peak_kib"] / 1024, torchfix_rc=tf["rc"],
                dtype_lint_same_scope_s=ours["wall"],
                bare_parse_same_scope_s=(bare["wall"] if options.stride > 1 else
                                         sum(bare_details["per_tree"].get(t, 0.0) for t in scope)),
            )
    results["loadavg_end"] = loadavg()

    print()
    print(f"cold / bare libcst parse        {results['cold_s'] / results['bare_parse_s']:.3f}x   (target <= 0.5)")
    print(f"--jobs 1 / bare libcst parse    {results['jobs1_s'] / results['bare_parse_s']:.3f}x")
    print(f"warm / cold                     {100 * results['warm_s'] / results['cold_s']:.1f} %   (target <= 5 %)")
    print(f"--version                       {results['version_script_s']:.3f} s   (target < 0.15)")
    print(f"5-file run                      {results['five_files_s']:.3f} s   (target < 0.5)")
    print(f"peak RSS, largest process       {results['cold_peak_mib']:.0f} MiB default jobs, "
          f"{results['jobs1_peak_mib']:.0f} MiB --jobs 1   (target < 300 MB)")
    print(f"findings {findings}, internal errors {len(internal_errors)}, by code {dict(sorted(by_code.items()))}")
    if "torchfix_s" in results:
        print(f"TorchFix / dtype-lint (cold)    {results['torchfix_s'] / results['dtype_lint_same_scope_s']:.2f}x"
              f"   on {', '.join(results['torchfix_scope']) if options.stride == 1 else f'{len(files)} files'}")
        print(f"TorchFix / bare libcst parse    {results['torchfix_s'] / results['bare_parse_same_scope_s']:.2f}x")
    options.json.write_text(json.dumps(results, indent=2, default=str))
    print(f"\nfigures in {options.json.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

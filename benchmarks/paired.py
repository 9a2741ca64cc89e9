"""Cold check against the bare libcst parse, measured in alternation to cancel the machine's drift.

    python benchmarks/paired.py [--rounds 2] [--compare-project]

On a shared machine whose speed drifts within minutes, one bare parse followed by one cold run
(as in bench.py) can be 15 % off either way; alternating them and comparing the minima is
steadier. Uses the file list and config of the last bench.py run (written here if missing).
``--compare-project`` also times the cold check with ``--no-project`` (file by file, without the
whole-program pass) in the same alternation, for the cost of that pass.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import BARE_PARSE, CORPUS, WORK, discovered_files, dtype_lint_env, measure  # noqa: E402
from corpus import ensure_corpus  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--compare-project", action="store_true",
                        help="also time the cold check with --no-project (no whole-program pass)")
    options = parser.parse_args()
    if options.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    trees = [path.name for path in ensure_corpus()]
    file_list, config = WORK / "files.txt", WORK / "bench-config.toml"
    env = dtype_lint_env(WORK / "cache-paired")
    if not file_list.exists() or not config.exists():
        WORK.mkdir(exist_ok=True)
        config.write_text("# empty: the default settings\n")
        file_list.write_text("\n".join(discovered_files(trees, env, config)))
    lint = [sys.executable, "-m", "dtype_lint", "check", "--config", str(config), "--format", "json",
            "--exit-zero", "--no-cache", *trees]
    bare_times, cold_times, local_times = [], [], []
    for index in range(options.rounds):
        bare = measure([sys.executable, "-c", BARE_PARSE, str(file_list)], cwd=CORPUS, env=env, label=f"paired-bare-{index}")
        cold = measure(lint, cwd=CORPUS, env=env, label=f"paired-cold-{index}")
        bare_times.append(bare["wall"])
        cold_times.append(cold["wall"])
        line = f"round {index}: bare {bare['wall']:.2f} s, cold {cold['wall']:.2f} s, ratio {cold['wall'] / bare['wall']:.3f}"
        if options.compare_project:
            local = measure([*lint, "--no-project"], cwd=CORPUS, env=env, label=f"paired-no-project-{index}")
            local_times.append(local["wall"])
            line += f"; --no-project {local['wall']:.2f} s (ratio {local['wall'] / bare['wall']:.3f})"
        print(line, flush=True)
    print(f"ratio of the minima: {min(cold_times) / min(bare_times):.3f}")
    if local_times:
        print(f"--no-project: ratio of the minima {min(local_times) / min(bare_times):.3f}; "
              f"the project pass costs {min(cold_times) / min(local_times):.3f}x the file-local check")


if __name__ == "__main__":
    main()

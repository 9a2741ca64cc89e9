"""Cold check against the bare libcst parse, measured in alternation to cancel the machine's drift.

    python benchmarks/paired.py [--rounds 2]

On a shared machine whose speed drifts within minutes, one bare parse followed by one cold run
(as in bench.py) can be 15 % off either way; alternating them and comparing the minima is
steadier. Needs the corpus and benchmarks/.work/ set up by one run of bench.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import BARE_PARSE, CORPUS, WORK, dtype_lint_env, measure  # noqa: E402
from corpus import ensure_corpus  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    if options.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    trees = [path.name for path in ensure_corpus()]
    file_list, config = WORK / "files.txt", WORK / "bench-config.toml"
    if not file_list.exists() or not config.exists():
        raise SystemExit("run benchmarks/bench.py once first (it writes the file list and the config)")
    env = dtype_lint_env(WORK / "cache-paired")
    lint = [sys.executable, "-m", "dtype_lint", "check", "--config", str(config), "--format", "json",
            "--exit-zero", "--no-cache", *trees]
    bare_times, cold_times = [], []
    for index in range(options.rounds):
        bare = measure([sys.executable, "-c", BARE_PARSE, str(file_list)], cwd=CORPUS, env=env, label=f"paired-bare-{index}")
        cold = measure(lint, cwd=CORPUS, env=env, label=f"paired-cold-{index}")
        bare_times.append(bare["wall"])
        cold_times.append(cold["wall"])
        print(f"round {index}: bare {bare['wall']:.2f} s, cold {cold['wall']:.2f} s, "
              f"ratio {cold['wall'] / bare['wall']:.3f}", flush=True)
    print(f"ratio of the minima: {min(cold_times) / min(bare_times):.3f}")


if __name__ == "__main__":
    main()

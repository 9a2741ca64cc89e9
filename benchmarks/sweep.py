"""The false-positive sweep's runner: check the corpus in a random order, writing findings as it goes.

    python benchmarks/sweep.py [--limit N] OUT.jsonl

Files are the ones the prefilter sends to libcst (the others cannot have findings), shuffled with
a fixed seed, so that a run stopped early has still checked a random sample of the corpus. One
JSON line per checked file: {"path", "findings", "internal_errors"}. Default settings.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import CORPUS, ensure_corpus, python_files  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=None)
    options = parser.parse_args()

    from dtype_lint.config import Settings
    from dtype_lint.engine import check_files, enabled_rules, might_match

    settings = Settings()
    files = [str(path.relative_to(CORPUS)) for path in python_files(ensure_corpus())]
    candidates = [
        f for f in files
        if might_match((CORPUS / f).read_text(encoding="utf-8", errors="replace"), enabled_rules(settings, f))
    ]
    random.Random(2026).shuffle(candidates)
    candidates = candidates[: options.limit]
    print(f"{len(candidates)} of {len(files)} files pass the prefilter", flush=True)
    with options.out.open("w", encoding="utf-8") as out:
        for start in range(0, len(candidates), 32):
            batch = [(f, str(CORPUS / f)) for f in candidates[start: start + 32]]
            for report in check_files(batch, settings, options.jobs):
                record = {
                    "path": report.path,
                    "findings": [finding.to_json() for finding in report.findings],
                    "internal_errors": report.internal_errors,
                }
                out.write(json.dumps(record) + "\n")
            out.flush()
            print(f"{start + len(batch)} files checked", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

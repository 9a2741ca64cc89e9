"""Recall on real fix commits (../shared/realfix), per `needs` category and per rule.

Runs the set's own scorer (``score.py --json``: each case's before and after versions checked
alone) and reads its per-case results back:

* per `needs` and per `category`: cases found for the right reason (an API-migration hit counts
  only for an API defect, as in score.py) at default confidence;
* per rule: the cases each code finds for the right reason, and its findings near the fixed
  lines of the after version (residue: most are false, since the fix removed the defect);
* with ``--compare OLD.json`` (a ``--save`` of an earlier run): the cases gained and lost.

    python benchmarks/realfix.py [--root ../shared/realfix] [--save out.json] [--compare old.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = HERE.parent.parent / "shared" / "realfix"


def run_scorer(root: Path, jobs: int, checker: str | None) -> tuple[list[dict], str]:
    """The scorer's per-case results and its summary line."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cases.json"
        cmd = [sys.executable, str(root / "score.py"), str(root), "--manifest", str(root / "MANIFEST.tsv"),
               "--jobs", str(jobs), "--json", str(out)]
        if checker:
            cmd += ["--dtype-lint", checker]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            raise SystemExit(f"realfix score.py failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()[-300:]}")
        lines = proc.stdout.strip().splitlines()
        errors = [line for line in lines if line.strip().startswith(("stderr:", "DTL001", "dtype-lint max exit"))]
        return json.loads(out.read_text()), "\n".join([*errors, lines[-1] if lines else ""])


def codes(hits: list[str]) -> list[str]:
    """``DTL102@662(medium)`` -> ``DTL102``."""
    return sorted({hit.split("@", 1)[0] for hit in hits})


def right_codes(case: dict) -> list[str]:
    """The codes whose hit counts for the defect (score.py's right_reason)."""
    api = case.get("category") in ("deprecated-amp-api", "dtype-kwarg-api")
    return [c for c in codes(case["hits_default"]) if api or c not in ("DTL201", "DTL210", "DTL601", "DTL701")]


def report(cases: list[dict]) -> dict:
    groups: dict[str, dict[str, list[int]]] = {"needs": {}, "category": {}}
    for case in cases:
        right = bool(right_codes(case))
        for key, table in groups.items():
            row = table.setdefault(case.get(key) or "-", [0, 0])
            row[0] += right
            row[1] += 1
    per_rule: dict[str, dict[str, int]] = collections.defaultdict(lambda: {"right": 0, "after_residue": 0})
    for case in cases:
        for code in right_codes(case):
            per_rule[code]["right"] += 1
        for code in codes(case["after_residue_default"]):
            per_rule[code]["after_residue"] += 1
    right = sum(bool(right_codes(c)) for c in cases)
    return {
        "cases": len(cases),
        "right_reason": right,
        "found": sum(bool(c["found_default"]) for c in cases),
        "per_needs": {k: {"right": v[0], "total": v[1]} for k, v in sorted(groups["needs"].items())},
        "per_category": {k: {"right": v[0], "total": v[1]} for k, v in sorted(groups["category"].items())},
        "per_rule": dict(sorted(per_rule.items())),
        "right_cases": sorted(c["id"] for c in cases if right_codes(c)),
    }


def print_report(summary: dict, cases: list[dict], verbose: bool) -> None:
    n = summary["cases"]
    print(f"realfix: right reason {summary['right_reason']}/{n} ({summary['right_reason'] / max(1, n):.0%}), "
          f"found {summary['found']}/{n}")
    for title, key in (("needs", "per_needs"), ("category", "per_category")):
        print(f"\nper {title}:")
        for name, row in summary[key].items():
            print(f"  {name:28s} {row['right']:3d}/{row['total']:<3d}")
    print("\nper rule (cases found for the right reason / cases with a finding near the fixed lines after the fix):")
    for code, row in summary["per_rule"].items():
        print(f"  {code}  {row['right']:3d}  {row['after_residue']:3d}")
    if verbose:
        print("\nper case (needs, category, right-reason hits):")
        for case in sorted(cases, key=lambda c: (c.get("needs", ""), c["id"])):
            print(f"  {case['id']:40s} {case.get('needs', ''):12s} {case['category']:26s} "
                  f"{' '.join(right_codes(case)) or '-'}")


def compare(summary: dict, old_path: Path) -> None:
    old = json.loads(old_path.read_text())["summary"]
    before, after = set(old["right_cases"]), set(summary["right_cases"])
    print(f"\ncompared with {old_path.name}: right reason {old['right_reason']} -> {summary['right_reason']}")
    for label, names in (("gained", after - before), ("lost", before - after)):
        if names:
            print(f"  {label}: {', '.join(sorted(names))}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the realfix folder (score.py, MANIFEST.tsv, cases/)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--checker", help="the dtype-lint command line score.py runs (default: the installed one)")
    parser.add_argument("--save", type=Path, help="write the summary and the per-case results here (JSON)")
    parser.add_argument("--compare", type=Path, help="a --save of an earlier run: list the cases gained and lost")
    parser.add_argument("--verbose", action="store_true", help="one line per case")
    parser.add_argument("--from-json", type=Path, help="read score.py --json output instead of running it")
    args = parser.parse_args(argv)
    if not (args.root / "score.py").is_file():
        print(f"error: no score.py under {args.root}", file=sys.stderr)
        return 2
    if args.from_json:
        cases, tail = json.loads(args.from_json.read_text()), ""
    else:
        cases, tail = run_scorer(args.root, args.jobs, args.checker)
    summary = report(cases)
    print_report(summary, cases, args.verbose)
    if args.compare:
        compare(summary, args.compare)
    if args.save:
        args.save.write_text(json.dumps({"summary": summary, "cases": cases}, indent=1))
    print("\n" + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())

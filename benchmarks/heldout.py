"""Recall on reconstructions of real reports (../shared/heldout-dev), per category and per rule.

Uses the set's own scorer's definitions (``score.py``: which lines are EXPECT and TRAP lines,
what covers a line, which twins are flagged in their defect's code band), loaded from its source,
and prints what it does plus:

* per category: EXPECT lines found;
* per rule: EXPECT lines it covers, trap lines it flags, twins it flags (any finding; same band
  ones are the sure false positives);
* with ``--compare OLD.json`` (a ``--save`` of an earlier run): the lines gained and lost.

    python benchmarks/heldout.py [--root ../shared/heldout-dev] [--save out.json] [--compare old.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_ROOT = HERE.parent.parent / "shared" / "heldout-dev"


def load_scorer(root: pathlib.Path) -> dict:
    """score.py's functions (it runs ``main()`` on import: its source is read up to that call)."""
    source = (root / "score.py").read_text()
    body, _, _ = source.rpartition("\nmain()")
    namespace: dict = {"__name__": "heldout_score"}
    exec(compile(body, str(root / "score.py"), "exec"), namespace)  # noqa: S102 - the set's own scorer
    return namespace


def score(root: pathlib.Path, jobs: int) -> dict:
    s = load_scorer(root)
    progs = s["programs"]([root / "cases", root / "scripts"])
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        found = [x for part in pool.map(lambda p: s["run"](p[1]), progs) for x in part]
    by_file: dict = {}
    for x in found:
        if x["code"] != "DTL001":
            by_file.setdefault(pathlib.Path(x["path"]).resolve(), []).append(x)
    lines, traps, twins = [], [], []
    cat_of: dict = {}
    for name, files in progs:
        for f in files:
            label = f.name if len(files) == 1 and not name.endswith("/") else name + f.name
            expected, trap_lines = s["markers"](f)
            got = by_file.get(f.resolve(), [])
            for line, cat in expected:
                cat_of.setdefault(name, cat)
                lines.append({"where": f"{label}:{line}", "category": cat,
                              "codes": sorted({x["code"] for x in got if s["covers"](x, line)}),
                              "elsewhere": sorted({f"{x['code']}@{x['line']}" for x in got})})
            for line in trap_lines:
                traps.append({"where": f"{label}:{line}", "codes": sorted({x["code"] for x in got if s["covers"](x, line)})})
    for name, files in progs:
        stem = name.rstrip("/").removesuffix(".py")
        if not stem.endswith("_ok"):
            continue
        got = [x for f in files for x in by_file.get(f.resolve(), [])]
        defect = stem.removesuffix("_ok") + (".py" if name.endswith(".py") else "/")
        bands = tuple(s["BANDS"].get(cat_of.get(defect, "other"), "DTL").split(","))
        twins.append({"name": name, "codes": sorted({x["code"] for x in got}),
                      "same_band": sorted({x["code"] for x in got if x["code"].startswith(bands)})})
    return {"lines": lines, "traps": traps, "twins": twins}


def summarise(result: dict) -> dict:
    per_category: dict = {}
    per_rule: dict = collections.defaultdict(lambda: {"expect": 0, "trap": 0, "twin": 0, "twin_same_band": 0})
    for line in result["lines"]:
        row = per_category.setdefault(line["category"], [0, 0])
        row[0] += bool(line["codes"])
        row[1] += 1
        for code in line["codes"]:
            per_rule[code]["expect"] += 1
    for trap in result["traps"]:
        for code in trap["codes"]:
            per_rule[code]["trap"] += 1
    for twin in result["twins"]:
        for code in twin["codes"]:
            per_rule[code]["twin"] += 1
        for code in twin["same_band"]:
            per_rule[code]["twin_same_band"] += 1
    hits = sum(bool(line["codes"]) for line in result["lines"])
    return {
        "recall": [hits, len(result["lines"])],
        "traps_flagged": [sum(bool(t["codes"]) for t in result["traps"]), len(result["traps"])],
        "twins_same_band": [sum(bool(t["same_band"]) for t in result["twins"]), len(result["twins"])],
        "twins_any": [sum(bool(t["codes"]) for t in result["twins"]), len(result["twins"])],
        "per_category": {k: {"found": v[0], "total": v[1]} for k, v in sorted(per_category.items())},
        "per_rule": dict(sorted(per_rule.items())),
        "found_lines": sorted(line["where"] for line in result["lines"] if line["codes"]),
    }


def print_report(summary: dict, result: dict, verbose: bool) -> None:
    hits, total = summary["recall"]
    print(f"heldout-dev: recall {hits}/{total} ({hits / max(1, total):.0%}); "
          f"traps flagged {summary['traps_flagged'][0]}/{summary['traps_flagged'][1]}; "
          f"twins flagged in their band {summary['twins_same_band'][0]}/{summary['twins_same_band'][1]} "
          f"(any finding: {summary['twins_any'][0]})")
    print("\nper category:")
    for name, row in summary["per_category"].items():
        print(f"  {name:26s} {row['found']:3d}/{row['total']:<3d}")
    print("\nper rule (EXPECT lines covered, trap lines, twins with a finding, of them in the band):")
    for code, row in summary["per_rule"].items():
        print(f"  {code}  {row['expect']:3d}  {row['trap']:3d}  {row['twin']:3d}  {row['twin_same_band']:3d}")
    flagged = [t for t in result["traps"] if t["codes"]] + [t for t in result["twins"] if t["codes"]]
    if flagged:
        print("\nfalse findings (trap lines, twins):")
        for item in flagged:
            print(f"  {item.get('where') or item['name']}: {' '.join(item['codes'])}")
    if verbose:
        print("\nmissed:")
        for line in result["lines"]:
            if not line["codes"]:
                print(f"  {line['where']} ({line['category']}) got {' '.join(line['elsewhere']) or '-'}")


def compare(summary: dict, old_path: pathlib.Path) -> None:
    old = json.loads(old_path.read_text())["summary"]
    before, after = set(old["found_lines"]), set(summary["found_lines"])
    print(f"\ncompared with {old_path.name}: recall {old['recall'][0]} -> {summary['recall'][0]}")
    for label, names in (("gained", after - before), ("lost", before - after)):
        if names:
            print(f"  {label}: {', '.join(sorted(names))}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=DEFAULT_ROOT, help="the heldout-dev folder (score.py, cases/, scripts/)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--save", type=pathlib.Path, help="write the summary and the per-line results here (JSON)")
    parser.add_argument("--compare", type=pathlib.Path, help="a --save of an earlier run: list the lines gained and lost")
    parser.add_argument("--verbose", action="store_true", help="list the missed lines")
    args = parser.parse_args(argv)
    if not (args.root / "score.py").is_file():
        print(f"error: no score.py under {args.root}", file=sys.stderr)
        return 2
    result = score(args.root, args.jobs)
    summary = summarise(result)
    print_report(summary, result, args.verbose)
    if args.compare:
        compare(summary, args.compare)
    if args.save:
        args.save.write_text(json.dumps({"summary": summary, **result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

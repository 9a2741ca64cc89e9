"""Score the installed `dtype-lint check` on the real-bug reproductions under cases/.

Each case is a folder checked as one project (all its files together). Its header line

    # realbugs-case: bug | family: 1,6 | shape: - | twin: <folder of the fixed version>

says what it is: `bug` (a reproduction; defect lines carry `# realbug: [f<n>] [s<n>]`),
`twin` (the fixed version of a bug) or `trap` (correct code that looks risky). `family`
is issue #11's family (1-7), `shape` issue #13's shape (1-6); a defect marker's own
`f<n>`/`s<n>` tags override the case's for that line. The ends of one defect that sits in
two places (`@name` on each: the cast, flag or load, and the use that fails) form one defect.
A defect counts as found when a finding's line range covers one of its marked lines; any finding on a twin or trap is a false
positive, except the API-migration codes listed in API_MIGRATION (counted apart).

    python benchmarks/realbugs/score.py [--min-confidence medium] [--json] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

CASES_DIR = Path(__file__).resolve().parent / "cases"
HEADER = re.compile(r"#\s*realbugs-case:\s*(?P<body>.+)$")
DEFECT = re.compile(r"#\s*realbug:(?P<tags>[^#]*)")
KINDS = ("bug", "twin", "trap")
# Rules about API migration (deprecated AMP API, the transformers `torch_dtype` rename, legacy
# TF32 flags): true on both sides of a twin pair, so not counted as false positives; their
# findings on twins and traps are counted on their own line.
API_MIGRATION = frozenset({"DTL201", "DTL601", "DTL701"})


@dataclass
class Defect:
    sites: list[tuple[str, int]]  # (file, line): the marked lines of one defect
    families: tuple[str, ...]
    shapes: tuple[str, ...]
    found_by: list[str] = field(default_factory=list)


@dataclass
class Case:
    name: str
    kind: str
    families: tuple[str, ...]
    shapes: tuple[str, ...]
    source: str
    defects: list[Defect]
    findings: list[dict] = field(default_factory=list)
    error: str = ""


def _split_tags(value: str) -> tuple[str, ...]:
    return tuple(t for t in re.split(r"[,\s]+", value.strip()) if t and t != "-")


def load_case(folder: Path) -> Case:
    meta: dict[str, str] = {}
    source = ""
    raw_defects: list[tuple[str, int, str]] = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder).as_posix()
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            header = HEADER.search(text)
            if header:
                for part in header.group("body").split("|"):
                    key, _, value = part.partition(":")
                    meta[key.strip() if value else "kind"] = (value or key).strip()
                continue
            if text.lstrip().startswith("# source:") and not source:
                source = text.split(":", 1)[1].strip()
            defect = DEFECT.search(text)
            if defect:
                raw_defects.append((rel, number, defect.group("tags")))
    kind = meta.get("kind", "")
    if kind not in KINDS:
        raise SystemExit(f"{folder.name}: no '# realbugs-case: bug|twin|trap' header")
    families = tuple(f"f{f}" for f in _split_tags(meta.get("family", "")))
    shapes = tuple(f"s{s}" for s in _split_tags(meta.get("shape", "")))
    defects: list[Defect] = []
    by_group: dict[str, Defect] = {}
    for rel, number, tags in raw_defects:
        tag_list = _split_tags(tags)
        own_f = tuple(t for t in tag_list if t.startswith("f"))
        own_s = tuple(t for t in tag_list if t.startswith("s"))
        group = next((t for t in tag_list if t.startswith("@")), None)
        if group in by_group:  # another end of a defect already seen
            defect = by_group[group]
            defect.sites.append((rel, number))
            defect.families = tuple(dict.fromkeys(defect.families + own_f))
            defect.shapes = tuple(dict.fromkeys(defect.shapes + own_s))
            continue
        defect = Defect([(rel, number)], own_f, own_s)
        defects.append(defect)
        if group:
            by_group[group] = defect
    for defect in defects:
        defect.families = defect.families or families
        defect.shapes = defect.shapes or shapes
    if kind == "bug" and not defects:
        raise SystemExit(f"{folder.name}: a bug case needs at least one '# realbug:' line")
    return Case(folder.name, kind, families, shapes, source, defects)


def _command() -> list[str]:
    exe = shutil.which("dtype-lint")
    return [exe] if exe else [sys.executable, "-m", "dtype_lint"]


def run_case(case: Case, min_confidence: str, cases_dir: Path = CASES_DIR, checker: list[str] | None = None) -> Case:
    folder = cases_dir / case.name
    cmd = (checker or _command()) + [
        "check", ".", "--format", "json", "--no-cache", "--jobs", "1",
        "--min-confidence", min_confidence, "--exit-zero",
    ]
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        case.error = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        return case
    case.findings = json.loads(proc.stdout or "[]")
    for finding in case.findings:
        if finding["code"] in API_MIGRATION:
            continue  # a deprecation on the defect line is not a find of the defect
        path = Path(finding["path"]).as_posix().removeprefix("./")
        end = finding.get("end_line") or finding["line"]
        for defect in case.defects:
            if any(p == path and finding["line"] <= line <= end for p, line in defect.sites):
                defect.found_by.append(finding["code"])
    return case


def _ratio(hit: int, total: int) -> dict:
    return {"found": hit, "total": total, "recall": round(hit / total, 3) if total else None}


def summarise(cases: list[Case]) -> dict:
    defects = [d for c in cases if c.kind == "bug" for d in c.defects]
    per_family: dict[str, list[int]] = {}
    per_shape: dict[str, list[int]] = {}
    for defect in defects:
        for tags, table in ((defect.families, per_family), (defect.shapes, per_shape)):
            for tag in tags:
                row = table.setdefault(tag, [0, 0])
                row[0] += bool(defect.found_by)
                row[1] += 1
    twins = [c for c in cases if c.kind == "twin"]
    traps = [c for c in cases if c.kind == "trap"]

    def flagged(group: list[Case], migration: bool) -> int:
        return sum(any((f["code"] in API_MIGRATION) == migration for f in c.findings) for c in group)

    return {
        "cases": {k: sum(c.kind == k for c in cases) for k in KINDS},
        "defects": _ratio(sum(bool(d.found_by) for d in defects), len(defects)),
        "bug_cases_with_a_find": _ratio(
            sum(any(d.found_by for d in c.defects) for c in cases if c.kind == "bug"),
            sum(c.kind == "bug" for c in cases),
        ),
        "per_family": {k: _ratio(*v) for k, v in sorted(per_family.items())},
        "per_shape": {k: _ratio(*v) for k, v in sorted(per_shape.items())},
        "twins_flagged": {"flagged": flagged(twins, False), "total": len(twins)},
        "traps_flagged": {"flagged": flagged(traps, False), "total": len(traps)},
        "twins_traps_with_api_migration_findings": flagged(twins + traps, True),
        "errors": {c.name: c.error for c in cases if c.error},
    }


def case_rows(cases: list[Case]) -> list[dict]:
    rows = []
    for case in cases:
        marked = {site for d in case.defects for site in d.sites}
        rows.append({
            "case": case.name,
            "kind": case.kind,
            "family": ",".join(case.families) or "-",
            "shape": ",".join(case.shapes) or "-",
            "defects_found": sum(bool(d.found_by) for d in case.defects),
            "defects": len(case.defects),
            "codes": sorted({f["code"] for f in case.findings}),
            "unmarked_findings": [
                f"{f['path']}:{f['line']} {f['code']}" for f in case.findings
                if (Path(f["path"]).as_posix().removeprefix("./"), f["line"]) not in marked
            ],
            "source": case.source,
            "error": case.error,
        })
    return rows


def print_text(summary: dict, rows: list[dict]) -> None:
    def fmt(r: dict) -> str:
        return f"{r['found']}/{r['total']}" + (f" ({r['recall']:.0%})" if r["total"] else "")

    print(f"{'case':46} {'kind':5} {'fam':8} {'shape':8} {'found':6} codes")
    for row in rows:
        found = f"{row['defects_found']}/{row['defects']}" if row["kind"] == "bug" else "-"
        codes = ",".join(row["codes"]) or ("ERROR: " + row["error"] if row["error"] else "")
        print(f"{row['case']:46} {row['kind']:5} {row['family']:8} {row['shape']:8} {found:6} {codes}")
    print()
    cases = summary["cases"]
    print(f"cases: {cases['bug']} bugs, {cases['twin']} twins, {cases['trap']} traps")
    print(f"defect lines found: {fmt(summary['defects'])}; bug cases with a find: "
          f"{fmt(summary['bug_cases_with_a_find'])}")
    print("per family (issue #11): " + ", ".join(f"{k} {fmt(v)}" for k, v in summary["per_family"].items()))
    print("per shape (issue #13):  " + ", ".join(f"{k} {fmt(v)}" for k, v in summary["per_shape"].items()))
    tw, tr = summary["twins_flagged"], summary["traps_flagged"]
    print(f"twins flagged: {tw['flagged']}/{tw['total']}; traps flagged: {tr['flagged']}/{tr['total']} "
          f"(not counting {', '.join(sorted(API_MIGRATION))}, which flag "
          f"{summary['twins_traps_with_api_migration_findings']} twins/traps)")
    for name, error in summary["errors"].items():
        print(f"error in {name}: {error}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-confidence", default="medium", choices=("high", "medium", "low"))
    parser.add_argument("--json", action="store_true", help="print the summary and rows as JSON")
    parser.add_argument("--jobs", type=int, default=2, help="cases checked at once")
    parser.add_argument("--cases-dir", type=Path, default=CASES_DIR, help="where the case folders are")
    parser.add_argument(
        "--checker", default=None,
        help="the command to run instead of the installed dtype-lint (e.g. 'python -m dtype_lint' with "
        "PYTHONPATH set to another checkout, to score a baseline)",
    )
    parser.add_argument("cases", nargs="*", help="case folder names (default: all)")
    args = parser.parse_args(argv)
    folders = sorted(p for p in args.cases_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    if args.cases:
        folders = [f for f in folders if f.name in set(args.cases)]
    cases = [load_case(folder) for folder in folders]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        checker = shlex.split(args.checker) if args.checker else None
        cases = list(pool.map(lambda c: run_case(c, args.min_confidence, args.cases_dir, checker), cases))
    summary, rows = summarise(cases), case_rows(cases)
    if args.json:
        print(json.dumps({"min_confidence": args.min_confidence, "summary": summary, "cases": rows}, indent=2))
    else:
        print_text(summary, rows)
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())

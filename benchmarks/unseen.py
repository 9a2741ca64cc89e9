"""Precision on code the project has never seen (issue 14): fetch, check, count.

    python benchmarks/unseen.py fetch              # -> benchmarks/unseen_corpus/<name>-<version>/
    python benchmarks/unseen.py check OUT.jsonl    # every finding at the default settings
    python benchmarks/unseen.py check OUT.jsonl --min-confidence low   # the hidden ones too
    python benchmarks/unseen.py table OUT.jsonl benchmarks/UNSEEN-TRIAGE.tsv

Twelve pinned projects outside the development corpus (timm, peft, accelerate, diffusers). The
source comes from the package index: the sdist (``pip download --no-binary :all:``) where the
index has one; otherwise the wheel, whose ``.py`` files are the project's sources (pure-Python
packages, or the Python layer of a compiled one). Nothing is installed. ``table`` joins the
findings with the triage file (one verdict per finding: true/false and why) and prints the
per-rule figures; findings missing from the triage are counted as untriaged.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "unseen_corpus"
SDISTS = {
    "lightning": "2.6.6",
    "trl": "1.16.0",
    "open_clip_torch": "3.3.0",
    "sentence_transformers": "6.3.0",
    "torchmetrics": "1.9.0",
    "lerobot": "0.4.4",
}
WHEELS = {  # no usable sdist on the index (metadata needs torch/CUDA to build)
    "torchtune": "0.6.1",
    "mosaicml": "0.32.1",
    "kornia": "0.9.0",
    "mmengine": "0.10.7",
    "bitsandbytes": "0.50.2",
    "torchao": "0.18.0",
}


def _pip_download(spec: str, binary: bool) -> None:
    # pip exits non-zero when preparing an sdist's metadata fails after the download; the
    # archive is then already there, which is all that is needed.
    mode = ["--only-binary", ":all:"] if binary else ["--no-binary", ":all:"]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", *mode,
         "--dest", str(CORPUS / "archives"), spec],
        check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def _archive(name: str, version: str, binary: bool) -> Path | None:
    pattern = f"{name}-{version}-*.whl" if binary else f"{name}-{version}.tar.gz"
    found = sorted((CORPUS / "archives").glob(pattern))
    return found[0] if found else None


def _unpack(name: str, version: str, binary: bool) -> Path:
    target = CORPUS / f"{name}-{version}"
    if target.is_dir():
        return target
    archive = _archive(name, version, binary)
    if archive is None:
        _pip_download(f"{name}=={version}", binary)
        archive = _archive(name, version, binary)
    if archive is None:
        raise SystemExit(f"could not download {name}=={version}")
    if binary:
        with zipfile.ZipFile(archive) as wheel:
            wheel.extractall(target)
    else:
        with tarfile.open(archive) as tar:
            if sys.version_info >= (3, 12):
                tar.extractall(CORPUS, filter="data")
            else:  # pragma: no cover - 3.10/3.11
                tar.extractall(CORPUS)
    return target


def ensure_corpus() -> list[Path]:
    (CORPUS / "archives").mkdir(parents=True, exist_ok=True)
    trees = [_unpack(name, version, False) for name, version in SDISTS.items()]
    trees += [_unpack(name, version, True) for name, version in WHEELS.items()]
    return trees


def python_files(trees: list[Path]) -> list[str]:
    files: list[str] = []
    for tree in trees:
        for directory, subdirs, names in os.walk(tree):
            subdirs.sort()
            files.extend(
                str(Path(directory, name).relative_to(CORPUS)) for name in sorted(names)
                if name.endswith((".py", ".ipynb"))
            )
    return files


def check(out: Path, jobs: int | None, min_confidence: str = "medium") -> None:
    from dtype_lint.config import Settings
    from dtype_lint.engine import check_files
    from dtype_lint.findings import Confidence

    settings = Settings(min_confidence=Confidence.parse(min_confidence))
    trees = ensure_corpus()
    files = python_files(trees)
    print(f"{len(files)} files", flush=True)
    errors = 0
    with out.open("w", encoding="utf-8") as sink:
        # each project is checked as one program, as `dtype-lint check <project>` does
        for tree in trees:
            own = [f for f in files if f.startswith(tree.name + "/")]
            for report in check_files([(f, str(CORPUS / f)) for f in own], settings, jobs, project=True):
                errors += len(report.internal_errors)
                for finding in report.findings:
                    sink.write(json.dumps(finding.to_json(), sort_keys=True) + "\n")
    print(f"internal errors: {errors}")


def _key(finding: dict) -> tuple[str, str, str]:
    return finding["path"], str(finding["line"]), finding["code"]


def table(findings_path: Path, triage_path: Path) -> None:
    findings = [json.loads(line) for line in findings_path.read_text().splitlines() if line]
    verdicts: dict[tuple[str, str, str], str] = {}
    with triage_path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            verdicts[(row["path"], row["line"], row["code"])] = row["verdict"]
    counts: dict[str, Counter] = {}
    for finding in findings:
        verdict = verdicts.get(_key(finding), "untriaged")
        counts.setdefault(finding["code"], Counter())[verdict] += 1
    total = Counter()
    print("| rule | findings | true | false | untriaged | precision |\n|---|---|---|---|---|---|")
    for code in sorted(counts):
        row = counts[code]
        total.update(row)
        print(_row(code, row))
    print(_row("**total**", total))


def _row(label: str, row: Counter) -> str:
    judged = row["true"] + row["false"]
    precision = f"{100 * row['true'] / judged:.0f} %" if judged else "-"
    return (f"| {label} | {sum(row.values())} | {row['true']} | {row['false']} | "
            f"{row['untriaged']} | {precision} |")


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch")
    run = sub.add_parser("check")
    run.add_argument("out", type=Path)
    run.add_argument("--jobs", type=int, default=None)
    run.add_argument("--min-confidence", default="medium", help="low also counts the hidden findings")
    count = sub.add_parser("table")
    count.add_argument("findings", type=Path)
    count.add_argument("triage", type=Path)
    options = parser.parse_args()
    if options.command == "fetch":
        for tree in ensure_corpus():
            print(tree.relative_to(HERE.parent))
    elif options.command == "check":
        check(options.out, options.jobs, options.min_confidence)
    else:
        table(options.findings, options.triage)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Precision on real repositories the project never saw, against a file of read verdicts.

    python benchmarks/unseen_repos.py benchmarks/UNSEEN-TRIAGE-2.tsv MIRROR_ROOT [--out DIR] [--jobs N]
    python benchmarks/unseen_repos.py benchmarks/UNSEEN-TRIAGE-3.tsv MIRROR_ROOT --repos benchmarks/unseen-repos-3.tsv

MIRROR_ROOT holds one fetched git snapshot per repository (``<owner>+<name>/repo``, as the
``fetch`` tool brings them). Every repository of ``REPOS`` is exported at the commit the verdicts
were read at (``*.py``, ``*.ipynb`` and the ``*.sh`` launch scripts) to ``DIR/<owner>+<name>`` when not there yet,
checked with the installed ``dtype-lint check . --format json`` at the default settings, and
every finding is matched to a verdict by (repo, file, line, code). Prints each finding of the
dtype-tracking rules that is FALSE or has no verdict yet, then one table row per rule: true,
debatable, false, untriaged (the API-migration rules and DTL001 apart), and exits 1 when a
repository reports an internal error.

``--repos TSV`` (columns repo, commit) checks another set of repositories than ``REPOS``;
``--save DIR`` writes each repository's findings to ``DIR/<owner>+<name>.json`` (to compare runs).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

API = frozenset({"DTL001", "DTL201", "DTL210", "DTL601", "DTL701"})
# The repositories of UNSEEN-TRIAGE-2.tsv, none of them in ../shared/precision-dev; the ones
# without a row had no dtype-tracking finding when the verdicts were read.
REPOS = {
    "Lightning-AI/litgpt": "26857050fe3ff627cd714fe92f5838f51a3d5efa",
    "facebookresearch/fairseq": "3d262bb25690e4eb2e7d3c1309b1e9c406ca4b99",
    "lucidrains/denoising-diffusion-pytorch": "faed4db28e724735323fa91c70aa9b28a6e1cbac",
    "karpathy/nanoGPT": "3adf61e154c3fe3fca428ad6bc3818b27a3b8291",
    "huggingface/accelerate": "16cb6eb80dd9aa8b4df1a63ef57863e455d53b83",
    "ultralytics/yolov5": "5081342f04fb287fc2e5f2b5a4e06752b7937b1c",
    "openai/guided-diffusion": "22e0df8183507e13a7813f8d38d51b072ca1e67c",
    "mlfoundations/open_clip": "89fb801f1e6087880e951fc8354b8a2077b79c6d",
    "pytorch/torchtune": "bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1",
    "huggingface/peft": "5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40",
    "Stability-AI/generative-models": "0ad7de9a5cb53fd63d6d30a4f385485e72e08597",
    "lm-sys/FastChat": "0e6d3e4beaab66f4d3f93db72541a4abab8af28d",
    "huggingface/diffusers": "58eb52c0803ea9af3abec60841c2a093bdf1f951",
    "tloen/alpaca-lora": "8bb8579e403dc78e37fe81ffbb253c413007323f",
    "CompVis/stable-diffusion": "21f890f9da3cfbeaba8e2ac3c425ee9e998d5229",
    "OpenGVLab/InternVL": "2410d1dbf208f0e799459aff9376e5747dbf41a2",
    "facebookresearch/mae": "efb2a8062c206524e35e47d04501ed4f544c0ae8",
}


def git(git_dir: Path, *args: str, text: bool = True):
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, text=text)


def export(repo: str, commit: str, mirror: Path, dest: Path) -> None:
    git_dir = mirror / repo.replace("/", "+") / "repo"
    if (git_dir / ".git").is_dir():
        git_dir = git_dir / ".git"
    if not git_dir.is_dir():
        sys.exit(f"no snapshot of {repo} under {mirror}: fetch github:{repo} first")
    if git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}").returncode:
        sys.exit(f"{repo}: commit {commit[:12]} is not in the snapshot")
    for name in git(git_dir, "ls-tree", "-r", "--name-only", commit).stdout.splitlines():
        if name.endswith((".py", ".ipynb", ".sh")):  # .sh: the launch scripts (facts/launch_scripts.py)
            blob = git(git_dir, "show", f"{commit}:{name}", text=False)
            if blob.returncode == 0:  # large notebooks may be missing from a snapshot
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                (dest / name).write_bytes(blob.stdout)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("triage")
    parser.add_argument("mirror")
    parser.add_argument("--out", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "unseen-repos"))
    parser.add_argument("--jobs", default="2")
    parser.add_argument("--repos", help="TSV of repo, commit (default: the 17 of UNSEEN-TRIAGE-2.tsv)")
    parser.add_argument("--save", help="folder for each repository's findings as JSON")
    args = parser.parse_args()
    repos = REPOS
    if args.repos:
        repos = {r["repo"]: r["commit"] for r in csv.DictReader(open(args.repos), delimiter="\t")}
    verdicts = {(r["repo"], r["file"], int(r["line"]), r["code"]): r["verdict"].upper()
                for r in csv.DictReader(open(args.triage), delimiter="\t")}
    counts: dict[str, Counter] = defaultdict(Counter)
    failed = []
    for repo, commit in sorted(repos.items()):
        dest = Path(args.out) / repo.replace("/", "+")
        if not dest.is_dir():
            dest.mkdir(parents=True)
            export(repo, commit, Path(args.mirror), dest)
        run = subprocess.run(["dtype-lint", "check", ".", "--format", "json", "--no-cache", "--exit-zero",
                              "--jobs", args.jobs], cwd=dest, capture_output=True, text=True)
        if run.returncode not in (0, 1) or "Traceback" in run.stderr or "internal error" in run.stderr.lower():
            failed.append(f"{repo}: exit {run.returncode}: {run.stderr.strip()[-300:]}")
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            Path(args.save, repo.replace("/", "+") + ".json").write_text(run.stdout or "[]")
        for finding in json.loads(run.stdout or "[]"):
            key = (repo, os.path.normpath(finding["path"]), finding["line"], finding["code"])
            verdict = verdicts.get(key, "UNTRIAGED")
            counts[finding["code"]][verdict] += 1
            if finding["code"] not in API and verdict in ("FALSE", "UNTRIAGED"):
                print(f"{verdict.lower()}: {repo}:{key[1]}:{key[2]} {key[3]} {finding['message'][:120]}")
    print("\n| rule | findings | true | debatable | false | untriaged |\n|---|---|---|---|---|---|")
    totals: dict[str, Counter] = {"dtype-tracking": Counter(), "API migration": Counter()}
    for code in sorted(counts):
        c = counts[code]
        totals["API migration" if code in API else "dtype-tracking"].update(c)
        print(f"| {code} | {sum(c.values())} | {c['TRUE']} | {c['DEBATABLE']} | {c['FALSE']} | {c['UNTRIAGED']} |")
    for name, c in totals.items():
        n = sum(c.values())
        share = f" ({c['TRUE'] / n:.0%} true)" if n else ""
        print(f"| **{name}** | **{n}** | {c['TRUE']}{share} | {c['DEBATABLE']} | {c['FALSE']} | {c['UNTRIAGED']} |")
    for line in failed:
        print("internal error:", line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

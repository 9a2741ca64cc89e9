"""Fetch and unpack the benchmark corpus: the sdists of timm, peft, accelerate and diffusers.

    python benchmarks/corpus.py            # -> benchmarks/corpus/<name>-<version>/

Versions are pinned so that figures from different days measure the same files. The sdists
come from the package index through ``pip download --no-deps --no-binary :all:`` (source only;
nothing is installed). Already unpacked trees are reused.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
PINNED = {
    "timm": "1.0.31",
    "peft": "0.21.2",
    "accelerate": "1.16.0",
    "diffusers": "0.42.1",
}


def _archive(name: str, version: str) -> Path | None:
    for candidate in sorted(CORPUS.glob(f"{name}-{version}.tar.gz")):
        return candidate
    return None


def _download(name: str, version: str) -> Path:
    archive = _archive(name, version)
    if archive is not None:
        return archive
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         "--dest", str(CORPUS), f"{name}=={version}"],
        check=True,
    )
    archive = _archive(name, version)
    if archive is None:
        raise SystemExit(f"pip download did not produce {name}-{version}.tar.gz")
    return archive


def _unpack(archive: Path) -> Path:
    target = CORPUS / archive.name[: -len(".tar.gz")]
    if target.is_dir():
        return target
    with tarfile.open(archive) as tar:
        if sys.version_info >= (3, 12):
            tar.extractall(CORPUS, filter="data")
        else:  # pragma: no cover - 3.10/3.11
            tar.extractall(CORPUS)
    return target


def ensure_corpus() -> list[Path]:
    """The unpacked source trees, fetching what is missing."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    mark_own_tree(CORPUS)
    return [_unpack(_download(name, version)) for name, version in PINNED.items()]


def mark_own_tree(directory: Path) -> None:
    """Make ``directory`` a work tree of its own for dtype-lint's discovery (gitignore.py): an empty
    ``.git`` folder. Otherwise the enclosing repository's ``.gitignore``, which lists
    ``benchmarks/corpus/``, would hide every corpus file from ``dtype-lint check``."""
    (directory / ".git").mkdir(exist_ok=True)


def python_files(trees: list[Path]) -> list[Path]:
    """Every ``.py`` file under the trees, sorted (the set both libcst and dtype-lint read)."""
    files: list[Path] = []
    for tree in trees:
        for directory, subdirs, names in os.walk(tree):
            subdirs.sort()
            files.extend(Path(directory, name) for name in sorted(names) if name.endswith(".py"))
    return files


if __name__ == "__main__":
    trees = ensure_corpus()
    for tree in trees:
        print(f"{tree.relative_to(HERE.parent)}: {len(python_files([tree]))} .py files")

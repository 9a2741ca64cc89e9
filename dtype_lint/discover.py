"""Paths on the command line -> the files to check, in a stable order.

Directories are walked for ``*.py`` (and ``*.ipynb``), skipping VCS folders, virtual environments,
build output, caches, ``exclude`` patterns and whatever git ignores. A file named explicitly is
always checked: pre-commit passes file names.
"""

from __future__ import annotations

import os
import subprocess

from dtype_lint.config import Settings
from dtype_lint.errors import UsageError

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")
SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", ".eggs",
        "build", "dist", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache",
        ".dtype_lint_cache", "site-packages", ".ipynb_checkpoints",
    }
)


def _skip_dir(name: str, full: str) -> bool:
    return (
        name in SKIPPED_DIRS
        or name.endswith(".egg-info")
        or os.path.exists(os.path.join(full, "pyvenv.cfg"))
    )


def _git_ignored(paths: list[str]) -> set[str]:
    """The subset of ``paths`` that git ignores (empty when git or a work tree is missing)."""
    if not paths:
        return set()
    by_dir: dict[str, list[str]] = {}
    for path in paths:
        by_dir.setdefault(os.path.dirname(os.path.abspath(path)) or ".", []).append(path)
    ignored: set[str] = set()
    # One git call per top-level work tree is enough; group by the first path's directory.
    cwd = sorted(by_dir)[0]
    try:
        result = subprocess.run(
            ["git", "check-ignore", "--stdin", "-z"],
            input="\0".join(os.path.abspath(p) for p in paths).encode(),
            capture_output=True,
            cwd=cwd,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return set()
    if result.returncode not in (0, 1):
        return set()
    absolute_to_given = {os.path.abspath(p): p for p in paths}
    for item in result.stdout.decode(errors="replace").split("\0"):
        if item in absolute_to_given:
            ignored.add(absolute_to_given[item])
    return ignored


def discover(paths: list[str], settings: Settings) -> list[tuple[str, str]]:
    """``(display_path, filesystem_path)`` pairs, sorted, without duplicates."""
    explicit: list[str] = []
    walked: list[str] = []
    for given in paths:
        if os.path.isfile(given):
            explicit.append(given)
        elif os.path.isdir(given):
            for directory, subdirs, names in os.walk(given):
                subdirs[:] = sorted(
                    d for d in subdirs
                    if not _skip_dir(d, os.path.join(directory, d))
                    and not settings.is_excluded(os.path.join(directory, d))
                )
                for name in sorted(names):
                    if name.endswith(SOURCE_SUFFIXES):
                        full = os.path.join(directory, name)
                        if not settings.is_excluded(full):
                            walked.append(full)
        else:
            raise UsageError(f"{given}: no such file or directory")
    ignored = _git_ignored(walked)
    chosen = explicit + [path for path in walked if path not in ignored]
    seen: set[str] = set()
    result: list[tuple[str, str]] = []
    for path in chosen:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            display = os.path.normpath(path) if path.startswith("./") else path
            result.append((display, path))
    return sorted(result)

"""Paths on the command line -> the files to check, in a stable order.

Directories are walked for ``*.py`` (and ``*.ipynb``), skipping VCS folders, virtual environments,
build output, caches, ``exclude`` patterns and whatever git ignores (read by gitignore.py: no git
process runs, so no command a cloned repository configures). A file named explicitly is checked
unless ``force-exclude`` is on and an exclude pattern covers it (pre-commit names every staged
file). Each path's exclude patterns come from its own settings (hierarchical config).
A path that does not exist, an unreadable directory, an entry that is not a regular file (a FIFO
named ``x.py`` would block the run) and a symlink out of the tree named on the command line are
recorded in ``errors`` as ``Unreadable`` and skipped; the other paths are still checked (the
commands report each as DTL001, as ruff and flake8 report E902).

Symlinks are never followed out of the tree: a walked symlink whose target lies outside the
directory walked is skipped (symlinked directories are not walked at all), and a symlink named on
the command line (a file or a directory) must point inside the working directory. So ``fix``
cannot be led to rewrite a file elsewhere (docs/security.md).
"""

from __future__ import annotations

import dataclasses
import os
import stat
from typing import Callable, Union

from dtype_lint.config import Settings
from dtype_lint.gitignore import GitIgnore
from dtype_lint.tree_files import link_out_of


@dataclasses.dataclass(frozen=True)
class Unreadable:
    """A path that could not be checked, and why (``reason`` as the system says it)."""

    path: str
    reason: str
    directory: bool = False

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")
DATA_FILE_SUFFIXES = (".yaml", ".yml", ".toml", ".json")  # read by the project pass (project/data_files.py)
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


def _is_regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _force_excluded(path: str, settings: Settings) -> bool:
    """A named file under an exclude pattern, or in a folder a walk skips (a virtual environment,
    build output) below its config's directory: ruff's ``force-exclude``."""
    if settings.is_excluded(path):
        return True
    folders = settings.relative(path).split("/")[:-1]
    if folders[:1] == [".."]:
        return False
    root = os.path.abspath(settings.root)
    return any(
        _skip_dir(name, os.path.join(root, *folders[: index + 1])) for index, name in enumerate(folders)
    )


def _walk_error(errors: list[Unreadable]):
    def record(error: OSError) -> None:
        errors.append(Unreadable(_display(error.filename), f"cannot read: {error.strerror}", directory=True))

    return record


def _walk(given: str, settings_for, suffixes: tuple[str, ...], errors: list[Unreadable], ignores: GitIgnore) -> list[str]:
    """The files under the directory ``given`` whose names end with ``suffixes``."""
    walked = []
    tree = os.path.realpath(given)
    for directory, subdirs, names in os.walk(given, onerror=_walk_error(errors)):
        here = settings_for(directory)  # the directory's config decides for what it holds
        subdirs[:] = sorted(
            d for d in subdirs
            if not _skip_dir(d, os.path.join(directory, d)) and not here.is_excluded(os.path.join(directory, d))
            and not ignores.ignored(os.path.join(directory, d), is_dir=True)
        )
        for name in sorted(names):
            if name.endswith(suffixes):
                full = os.path.join(directory, name)
                if here.is_excluded(full) or ignores.ignored(full, is_dir=False) or link_out_of(full, tree):
                    continue
                if not _is_regular_file(full):
                    errors.append(Unreadable(_display(full), "not a regular file"))
                    continue
                walked.append(full)
    return walked


def _display(path: str) -> str:
    """How a path is shown: without a leading ``./``, and a name that is not UTF-8 with its bytes
    as ``\\xNN`` (every output format can hold that; the file itself is still opened by its name)."""
    from dtype_lint.printable import unicode_path

    return unicode_path(os.path.normpath(path) if path.startswith("./") else path)


def discover_data(paths: list[str], settings: Union[Settings, Callable[[str], Settings]]) -> list[tuple[str, str]]:
    """The config data files (YAML, TOML, JSON) under the directories in ``paths`` and those named
    explicitly, as ``(display_path, filesystem_path)``: they feed the project pass's facts
    (dtype_lint/project/data_files.py), never get findings. Unreadable entries are skipped quietly."""
    settings_for = (lambda path: settings) if isinstance(settings, Settings) else settings
    ignores = GitIgnore()
    found: list[str] = []
    for given in paths:
        if link_out_of(given):
            continue
        if os.path.isdir(given):
            found.extend(_walk(given, settings_for, DATA_FILE_SUFFIXES, [], ignores))
        elif given.endswith(DATA_FILE_SUFFIXES) and _is_regular_file(given):
            found.append(given)
    result = {}
    for path in found:
        result.setdefault(os.path.realpath(path), (_display(path), path))
    return sorted(result.values())


def discover(
    paths: list[str],
    settings: Union[Settings, Callable[[str], Settings]],
    errors: list[Unreadable] | None = None,
) -> list[tuple[str, str]]:
    """``(display_path, filesystem_path)`` pairs, sorted, without duplicates. ``settings``: one
    Settings for every path, or a function from a path to its settings. ``errors`` receives the
    paths that cannot be checked."""
    settings_for = (lambda path: settings) if isinstance(settings, Settings) else settings
    errors = [] if errors is None else errors
    ignores = GitIgnore()
    explicit: list[str] = []
    walked: list[str] = []
    for given in paths:
        if link_out_of(given):
            errors.append(Unreadable(_display(given), "a symbolic link to a path outside the working directory, not followed"))
        elif os.path.isdir(given):
            walked.extend(_walk(given, settings_for, SOURCE_SUFFIXES, errors, ignores))
        elif given.endswith(DATA_FILE_SUFFIXES) and os.path.exists(given):
            continue  # a config file named on the command line feeds facts (discover_data), gets no findings
        elif os.path.exists(given):
            own = settings_for(given)
            if own.force_exclude and _force_excluded(given, own):
                continue
            if not _is_regular_file(given):
                errors.append(Unreadable(_display(given), "not a regular file"))
                continue
            explicit.append(given)
        else:
            errors.append(Unreadable(_display(given), "cannot read: No such file or directory"))
    seen: set[str] = set()
    result: list[tuple[str, str]] = []
    for path in explicit + walked:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            result.append((_display(path), path))
    return sorted(result)


def warn_if_empty(files: list[tuple[str, str]], paths: list[str], quiet: int = 0, errors: list = ()) -> None:
    """ruff's habit: a run that found nothing to check says so (and still exits 0). Not when
    something could not be read: that error says more."""
    import sys

    from dtype_lint.printable import printable

    if not files and not errors and quiet < 2:
        print(f"dtype-lint: warning: no Python files found under {printable(', '.join(paths))}", file=sys.stderr)

"""How ``.dtype_lint_cache/`` is laid out on disk, and what keeps it small (cache.py decides what
an entry means; this module only stores and prunes).

    .dtype_lint_cache/<analyzer>/<settings>/<name>.z

``<analyzer>`` is one generation of the analyzer (its fingerprint), ``<settings>`` one set of
settings run under it, ``<name>`` one source file (its findings) or one file's project-pass
worlds (a single entry per file, replaced when the worlds change). An entry is zlib-compressed
JSON: the project summaries it mostly holds shrink tenfold, and the file's lines are not stored
(they are the file's bytes, which the reader has). After a run the cache is pruned: analyzer
generations but the current one and the last other one used (a pre-commit environment next to a
development one; of it only the settings it used last), settings but the ``KEPT_SETTINGS`` most
recently used (and those of this run), and once a day the entries of files that are gone. On
accelerate (2.6 MB of source) one settings' entries take 0.29 MB, 1.1 MB of disk blocks.

A cache directory may come with a checkout (docs/security.md): pruning reads entries as cache.py
does (regular files only, bounded, never blocking), never follows a symlinked folder, and writes
its markers only into real folders.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
import zlib
from typing import Any, Iterable

from dtype_lint.tree_files import read_regular_file

SUFFIX = ".z"
USED_MARKER = ".used"  # touched when a generation or a set of settings is used
SWEPT_MARKER = ".swept"  # when the entries of deleted files were last looked for
KEPT_SETTINGS = 3
SWEEP_EVERY_S = 24 * 3600
# An entry is a few kB compressed; anything near this is not one of ours.
MAX_ENTRY_BYTES = 64 * 1024 * 1024

_touched: set[tuple[str, ...]] = set()  # folders marked by this process in this run


def new_run() -> float:
    """Start a run (a process pool forked later inherits the reset): its start time."""
    _touched.clear()
    return time.time()


def encode(entry: dict[str, Any]) -> bytes:
    return zlib.compress(json.dumps(entry, separators=(",", ":")).encode("utf-8"), 6)


def decode(data: bytes) -> dict[str, Any]:
    """The entry ``data`` holds; ValueError when it is not one (corrupt, truncated, too large)."""
    inflater = zlib.decompressobj()
    try:
        text = inflater.decompress(data, MAX_ENTRY_BYTES)
    except zlib.error as error:
        raise ValueError(f"not a cache entry: {error}") from None
    if inflater.unconsumed_tail or not inflater.eof:
        raise ValueError("not a cache entry: truncated or too large")
    entry = json.loads(text)
    if not isinstance(entry, dict):
        raise ValueError("not a cache entry")
    return entry


def entry_path(directory: str, generation: str, settings: str, name: str) -> str:
    # One flat folder per settings: a folder per hash prefix would cost a disk block each.
    return os.path.join(directory, generation, settings, name + SUFFIX)


def real_folder(path: str) -> bool:
    """Whether ``path`` is a folder and not a symlink to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _touch(folder: str, name: str) -> None:
    """Create or touch ``folder/name`` (a marker), never through a symlink."""
    marker = os.path.join(folder, name)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(marker, flags, 0o644)
        try:
            if stat.S_ISREG(os.fstat(descriptor).st_mode):
                os.utime(descriptor)
        finally:
            os.close(descriptor)
    except (OSError, NotImplementedError):
        pass


def mark_used(*folders: str) -> None:
    """Touch each folder's marker once per run (``folders``: outermost first, each inside the one
    before): pruning keeps what was used last. Nothing is touched below a symlink."""
    if folders in _touched:
        return
    _touched.add(folders)
    if all(real_folder(folder) for folder in folders):
        for folder in folders:
            _touch(folder, USED_MARKER)


def _last_used(folder: str) -> float:
    try:
        return os.stat(os.path.join(folder, USED_MARKER)).st_mtime
    except OSError:
        return 0.0


def _subfolders(folder: str) -> list[str]:
    try:
        return sorted(entry.path for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _is_generation(name: str) -> bool:
    return len(name) == 16 and all(c in "0123456789abcdef" for c in name)


def prune(directory: str, generation: str, in_use: Iterable[str], now: float | None = None) -> None:
    """Drop what the current analyzer no longer reads (see the module's docstring); the settings
    folders named in ``in_use`` (this run's) are kept whatever their number. Never raises: a cache
    that cannot be pruned costs disk, not a result."""
    now = time.time() if now is None else now
    current = os.path.join(directory, generation)
    if not real_folder(directory) or not real_folder(current):
        return
    others = []
    for folder in _subfolders(directory):
        name = os.path.basename(folder)
        if folder == current:
            continue
        if _is_generation(name):
            others.append(folder)
        elif len(name) == 2:  # the layout before generations: one flat level of entries
            shutil.rmtree(folder, ignore_errors=True)
    others.sort(key=_last_used, reverse=True)
    for folder in others[1:]:
        shutil.rmtree(folder, ignore_errors=True)
    for folder in others[:1]:
        for older in sorted(_subfolders(folder), key=_last_used, reverse=True)[1:]:
            shutil.rmtree(older, ignore_errors=True)
    settings = sorted(_subfolders(current), key=_last_used, reverse=True)
    # This run's settings are named, not found by time: a run a second earlier has the same mtime.
    in_use = set(in_use)
    current_run = [folder for folder in settings if os.path.basename(folder) in in_use]
    earlier = [folder for folder in settings if os.path.basename(folder) not in in_use]
    kept_folders = current_run + earlier[: max(0, KEPT_SETTINGS - len(current_run))]
    for folder in settings:
        if folder not in kept_folders:
            shutil.rmtree(folder, ignore_errors=True)
    swept = os.path.join(current, SWEPT_MARKER)
    try:
        due = now - os.stat(swept).st_mtime >= SWEEP_EVERY_S
    except OSError:
        due = True
    if due:
        for folder in kept_folders:
            _sweep(folder)
        _touch(current, SWEPT_MARKER)


def _sweep(folder: str) -> None:
    """Remove the entries whose source file is gone (or that cannot be read)."""
    try:
        names = [entry.path for entry in os.scandir(folder) if entry.name.endswith(SUFFIX)]
    except OSError:
        return
    for path in names:
        data = read_regular_file(path, MAX_ENTRY_BYTES, follow_symlinks=False)
        try:
            source = decode(data).get("file") if data is not None else None
        except (ValueError, RecursionError):
            source = None
        keep = isinstance(source, str) and os.path.exists(source)
        if not keep:
            try:
                os.unlink(path)
            except OSError:
                pass

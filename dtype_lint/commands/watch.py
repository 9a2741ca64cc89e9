"""``check --watch``: check, then check again whenever a file that could change the result does.

Polling, not an OS file-watching API: no dependency, the same on every platform, and a few stat
calls per file every half second cost nothing next to a check. What is watched: the Python files
and notebooks under the paths, the config and data files (pyproject.toml, dtype-lint.toml, YAML,
JSON) the project pass reads, skipping the folders a check skips. Ctrl-C stops it (exit 130).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable

from dtype_lint.config import CONFIG_NAMES
from dtype_lint.discover import DATA_FILE_SUFFIXES, SOURCE_SUFFIXES, _skip_dir
from dtype_lint.errors import UsageError

POLL_SECONDS = 0.5
WATCHED_SUFFIXES = SOURCE_SUFFIXES + DATA_FILE_SUFFIXES


def snapshot(paths: list[str], ignored: frozenset[str] = frozenset()) -> dict[str, tuple[int, int]]:
    """Each watched file's (modification time, size); ``ignored``: absolute paths left out (the
    run's own ``-o`` file)."""
    state: dict[str, tuple[int, int]] = {}

    def record(path: str) -> None:
        if os.path.abspath(path) in ignored:
            return
        try:
            info = os.stat(path)
        except OSError:
            return
        state[path] = (info.st_mtime_ns, info.st_size)

    for given in paths:
        if not os.path.isdir(given):
            record(given)
            continue
        for directory, subdirs, names in os.walk(given):
            subdirs[:] = sorted(d for d in subdirs if not _skip_dir(d, os.path.join(directory, d)))
            for name in names:
                if name.endswith(WATCHED_SUFFIXES) or name in CONFIG_NAMES:
                    record(os.path.join(directory, name))
    return state


def _note(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def watch(check: Callable[[], int], paths: list[str], ignored: frozenset[str] = frozenset(),
          poll_seconds: float = POLL_SECONDS) -> int:
    _note("Starting dtype-lint in watch mode...")
    check()
    sys.stdout.flush()
    seen = snapshot(paths, ignored)
    _note("Watching for file changes.")
    while True:
        time.sleep(poll_seconds)
        now = snapshot(paths, ignored)
        if now == seen:
            continue
        seen = now
        _note("File change detected...")
        try:
            check()
        except UsageError as error:  # a config being edited: say so and keep watching
            print(f"dtype-lint: error: {error}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        _note("Watching for file changes.")

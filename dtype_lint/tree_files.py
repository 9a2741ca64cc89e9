"""Files a checked-out tree supplies (a cache entry, a ``.gitignore``, a baseline, a symlink),
handled without trusting them: a FIFO must not block the run, ``/dev/zero`` must not fill memory,
a symlink must not lead a write out of the tree (docs/security.md)."""

from __future__ import annotations

import os
import stat


def read_regular_file(path: str, limit: int, *, follow_symlinks: bool = True) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes, else None.

    Opened without blocking (a FIFO's ``open`` waits for a writer) and, unless ``follow_symlinks``,
    refusing a symlink as the last component; devices, FIFOs, sockets and directories are refused
    by their type, and a file that grows past ``limit`` while it is read is refused too."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks, size = [], 0
        while True:
            chunk = os.read(descriptor, min(1 << 20, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                return None
    except OSError:
        return None
    finally:
        os.close(descriptor)


def inside(path: str, tree: str) -> bool:
    """Whether the real path ``path`` is ``tree`` (a real path) or below it."""
    return path == tree or path.startswith(tree.rstrip(os.sep) + os.sep)


def link_out_of(path: str, tree: str | None = None) -> bool:
    """Whether ``path`` is a symlink whose target is not inside ``tree`` (default: the working
    directory)."""
    if not os.path.islink(path):
        return False
    return not inside(os.path.realpath(path), os.path.realpath(tree if tree is not None else os.getcwd()))

"""Memory of one file's check, kept in proportion to the file (see benchmarks/linearity.py).

A check holds CPython's tree (about 70 bytes per byte of source), libcst's (30-60) and the facts
(50-150); libcst's native parser needs 250-770 bytes per byte while it runs (parsing.py slices big
files for it). What is freed goes back to the C heap, where Python's own allocator cannot reuse it:
after a big file it is handed back to the system.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import sys

# A file this big (characters) is parsed by CPython a second time for its project summary rather
# than holding that tree through libcst's parse and the rules.
REPARSE_FOR_SUMMARY = 200_000
# After libcst parses a file this big, and after its check, freed memory is handed back.
RETURN_FREED_MEMORY = 100_000


@contextlib.contextmanager
def cyclic_gc_paused():
    """No cyclic garbage collection while one file is checked: its trees and facts are hundreds of
    thousands of long-lived objects that each collection would scan again (a third of the time of
    a 1 MB file). What the check leaves behind goes at the next collection."""
    if not gc.isenabled():  # nested (a fix re-checks), or the caller's choice
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def return_freed_memory() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None elsewhere (macOS, musl: the memory is then only reused)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None

"""Every process the program starts, in whatever session, found and stopped (parent side).

A launcher or a program may put children in sessions of their own (``start_new_session``,
``setsid``, a daemon's double fork): ``killpg`` of the program's group misses them, and once
their parent dies they are re-parented out of reach. So ``dtype-lint confirm`` makes itself a
child subreaper (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): orphans of the program are re-parented
to confirm instead of init, and every process the program ever started stays a descendant of
confirm in ``/proc``, where ``stop_all`` finds it. Elsewhere, the program's group and the pids
the companion recorded are what can be reached.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
# Rounds of SIGKILL: a process forking while it is killed leaves a child for the next round.
KILL_ROUNDS = 5


def adopt_orphans() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux); True when it is."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, list[tuple[int, bytes]]] | None:
    """parent pid -> [(pid, state)] from /proc; None where there is no /proc."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    children: dict[int, list[tuple[int, bytes]]] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                data = handle.read()
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            fields = data[data.rindex(b")") + 2:].split()
            children.setdefault(int(fields[1]), []).append((int(name), fields[0]))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return children


def descendants(root: int) -> list[int] | None:
    """Live (not zombie) descendants of ``root``; None where /proc cannot tell."""
    children = _parents()
    if children is None:
        return None
    found: list[int] = []
    pending = [root]
    while pending:
        for pid, state in children.get(pending.pop(), ()):
            pending.append(pid)
            if state != b"Z":
                found.append(pid)
    return found


def _signal(pids, sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_all(process, grace: float, recorded=()) -> None:
    """SIGTERM to the program and every descendant of confirm, SIGKILL to what is left after
    ``grace`` seconds; returns once the program's own process is reaped. ``recorded``: the pids
    the companion wrote down, signalled only where /proc cannot list descendants (a recorded pid
    may since have been reused by another process)."""
    me = os.getpid()

    def targets() -> list[int]:
        found = descendants(me)
        return list(recorded) if found is None else found

    _signal_group(process.pid, signal.SIGTERM)
    _signal(targets(), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and (process.poll() is None or descendants(me)):
        time.sleep(0.05)
    for _ in range(KILL_ROUNDS):
        _signal_group(process.pid, signal.SIGKILL)
        left = targets()
        if not left:
            break
        _signal(left, signal.SIGKILL)
        if descendants(me) is None:
            break  # no /proc: one round at the recorded pids is all that can be done
        time.sleep(0.02)
    process.wait()
    reap_orphans()


def reap_orphans() -> None:
    """Collect the exit status of adopted orphans, so none lingers as a zombie.

    Only after the program's own process was waited for: ``waitpid(-1)`` could take its status.
    """
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return

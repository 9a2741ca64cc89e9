"""Evidence out of the child: JSONL appended as it happens, and user-line attribution.

A frame is the user's when its file lies under one of the program's roots and not in an installed
package or in dtype-lint. Attribution walks Python frames only when something is being recorded.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FOREIGN_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


class Recorder:
    def __init__(self, evidence_dir: str, roots: list[str]):
        self.pid = os.getpid()
        self.rank = int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0)
        self.step = 0
        self.roots = tuple(os.path.abspath(root) + os.sep for root in roots)
        self._is_user: dict[str, str | None] = {}
        self._seen: set = set()
        self._fd = os.open(
            os.path.join(evidence_dir, f"{self.pid}.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
        )

    # -- attribution -----------------------------------------------------------------------------
    def user_path(self, filename: str) -> str | None:
        """The absolute path of ``filename`` when it is the user's, else None (cached)."""
        try:
            return self._is_user[filename]
        except KeyError:
            pass
        path = None
        if filename and not filename.startswith("<"):
            absolute = os.path.abspath(filename)
            if (
                absolute.startswith(self.roots)
                and not absolute.startswith(_PACKAGE_DIR + os.sep)
                and not any(marker in absolute for marker in _FOREIGN_MARKERS)
            ):
                path = absolute
        self._is_user[filename] = path
        return path

    def user_stack(self, frame=None, limit: int = 12) -> list[list]:
        """User ``[path, line]`` frames from ``frame`` outwards (innermost first)."""
        frame = frame or sys._getframe(1)
        stack: list[list] = []
        while frame is not None and len(stack) < limit:
            path = self.user_path(frame.f_code.co_filename)
            if path is not None:
                stack.append([path, frame.f_lineno])
            frame = frame.f_back
        return stack

    def traceback_stack(self, tb) -> list[list]:
        stack: list[list] = []
        while tb is not None:
            path = self.user_path(tb.tb_frame.f_code.co_filename)
            if path is not None:
                stack.append([path, tb.tb_lineno])
            tb = tb.tb_next
        stack.reverse()
        return stack

    def site(self, frame=None) -> list | None:
        stack = self.user_stack(frame or sys._getframe(1), limit=1)
        return stack[0] if stack else None

    # -- writing ---------------------------------------------------------------------------------
    def write(self, record: dict[str, Any]) -> None:
        record.setdefault("rank", self.rank)
        record.setdefault("pid", self.pid)
        record.setdefault("step", self.step)
        record.setdefault("time", round(time.time(), 3))
        line = json.dumps(record, default=str, separators=(",", ":")) + "\n"
        try:
            os.write(self._fd, line.encode("utf-8"))  # one write per record: O_APPEND keeps it whole
        except OSError:
            pass

    def claim(
        self,
        what: str,
        codes: tuple[str, ...] | list[str],
        message: str,
        stack: list[list],
        origins: list[list] | None = None,
        detail: dict[str, Any] | None = None,
        key: Any = None,
        code: str | None = None,
    ) -> bool:
        """Record a claim once per ``key`` (default: what + innermost line). True if written.

        ``code``: the rule the claim is reported as when no static finding takes it (the run's
        evidence picks it among ``codes``); the first of ``codes`` by default."""
        key = key if key is not None else (what, tuple(stack[0]) if stack else None)
        if key in self._seen:
            return False
        self._seen.add(key)
        self.write(
            {
                "kind": "claim",
                "what": what,
                "code": code or codes[0],
                "codes": list(codes),
                "message": message,
                "stack": stack,
                "origins": origins or [],
                "detail": detail or {},
            }
        )
        return True

"""Which flagged lines ran: a trace function that only looks inside the flagged files.

The global tracer answers each new frame with one dictionary lookup and traces lines only in
frames of flagged files; each flagged line is written once, the first time it runs.
(``sys.monitoring`` would be cheaper on 3.12+; settrace works on every supported Python.)
"""

from __future__ import annotations

import os
import sys
import threading

from dtype_lint.runtime.recorder import Recorder


def install(flagged: dict[str, list[int]], recorder: Recorder) -> None:
    if not flagged:
        return
    wanted: dict[str, set[int]] = {os.path.abspath(path): set(lines) for path, lines in flagged.items()}
    by_filename: dict[str, set[int] | None] = {}

    def lines_for(filename: str) -> set[int] | None:
        try:
            return by_filename[filename]
        except KeyError:
            lines = wanted.get(os.path.abspath(filename)) if not filename.startswith("<") else None
            by_filename[filename] = lines
            return lines

    def trace_lines(frame, event, arg):
        if event == "line":
            lines = by_filename.get(frame.f_code.co_filename)
            if lines and frame.f_lineno in lines:
                lines.discard(frame.f_lineno)
                recorder.write(
                    {"kind": "reach", "path": os.path.abspath(frame.f_code.co_filename), "line": frame.f_lineno}
                )
        return trace_lines

    def trace_calls(frame, event, arg):
        lines = lines_for(frame.f_code.co_filename)
        return trace_lines if lines else None

    sys.settrace(trace_calls)
    threading.settrace(trace_calls)
    # The frames already running (the one importing us) started before the tracer existed.
    frame = sys._getframe(1)
    while frame is not None:
        if lines_for(frame.f_code.co_filename):
            frame.f_trace = trace_lines
        frame = frame.f_back

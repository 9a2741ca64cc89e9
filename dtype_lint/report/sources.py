"""Helpers the machine-readable formats share: a finding's source lines and relative paths."""

from __future__ import annotations

import os
from pathlib import PurePath

from dtype_lint.findings import Finding


def lines_by_path(reports) -> dict[str, list[str] | None]:
    return {report.path: report.lines for report in reports}


def source_line(lines: list[str] | None, finding: Finding, line: int) -> str | None:
    """The text of ``line`` in the finding's file, or in its cell for a notebook finding."""
    if not lines:
        return None
    if finding.cell is not None:
        from dtype_lint.notebook import cell_line

        return cell_line(lines, finding.cell, line)
    return lines[line - 1] if 1 <= line <= len(lines) else None


def relative_path(path: str) -> str:
    """``path`` relative to the working directory, with forward slashes (as code scanning and
    review bots want them); a path outside it stays absolute."""
    if path in ("", "-"):
        return "stdin"
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        path = path if relative.startswith("..") else relative
    return PurePath(os.path.normpath(path)).as_posix()

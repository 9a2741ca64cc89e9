"""``--format rdjson``: reviewdog's diagnostic format (``DiagnosticResult``), for review bots.

Positions are 1-based with columns in UTF-8 bytes, as reviewdog's proto defines them; ends are
exclusive. A fix becomes one ``suggestion`` replacing the lines it touches, so reviewdog posts it
as a single suggested change. A notebook finding carries no range (its lines are cell-relative,
not lines of the JSON reviewdog diffs) and no suggestion; its message names cell and line.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from dtype_lint.edits import OverlappingEdits, apply_edits
from dtype_lint.findings import Edit, Finding, Safety
from dtype_lint.report import all_findings
from dtype_lint.report.sources import lines_by_path, relative_path, source_line
from dtype_lint.report.text_format import headline
from dtype_lint.rule_docs import HOMEPAGE, rule_url

SOURCE = {"name": "dtype-lint", "url": HOMEPAGE}


def byte_column(line_text: str | None, column: int) -> int:
    """A 1-based code-point column as a 1-based UTF-8 byte column."""
    if line_text is None:
        return column
    return len(line_text[: column - 1].encode("utf-8")) + 1


def _position(lines: list[str] | None, finding: Finding, line: int, column: int) -> dict[str, int]:
    return {"line": line, "column": byte_column(source_line(lines, finding, line), column)}


def _suggestion(lines: list[str] | None, finding: Finding) -> dict[str, Any] | None:
    """The fix as one replacement of whole lines ``first..last`` (without the final newline)."""
    fix = finding.fix
    if fix is None or not fix.edits or not lines or finding.cell is not None:
        return None
    first = min(edit.line for edit in fix.edits)
    # An edit ending at column 1 of a line ends before that line's text: that line stays.
    last = max(edit.end_line - 1 if edit.end_column == 1 and edit.end_line > edit.line else edit.end_line for edit in fix.edits)
    last = max(last, first)
    if last > len(lines):
        return None
    block = "\n".join(lines[first - 1 : last]) + "\n"
    shifted = [
        Edit(e.line - first + 1, e.column, e.end_line - first + 1, e.end_column, e.content) for e in fix.edits
    ]
    try:
        replaced = apply_edits(block, shifted)
    except OverlappingEdits:
        return None
    return {
        "range": {
            "start": {"line": first, "column": 1},
            "end": {"line": last, "column": len(lines[last - 1].encode("utf-8")) + 1},
        },
        "text": replaced[:-1] if replaced.endswith("\n") else replaced,
    }


def diagnostic(finding: Finding, lines: list[str] | None) -> dict[str, Any]:
    message = finding.message
    location: dict[str, Any] = {"path": relative_path(finding.path)}
    if finding.cell is not None:
        message = f"cell {finding.cell}, line {finding.line}, column {finding.column}: {message}"
    else:
        location["range"] = {
            "start": _position(lines, finding, finding.line, finding.column),
            "end": _position(lines, finding, finding.end_line, finding.end_column),
        }
    result: dict[str, Any] = {
        "message": message,
        "location": location,
        "severity": "ERROR",
        "code": {"value": finding.code, "url": rule_url(finding.code)},
        "original_output": headline(finding),
    }
    suggestion = _suggestion(lines, finding)
    if suggestion is not None:
        result["suggestions"] = [suggestion]
        if finding.fix.safety is Safety.UNSAFE:
            result["message"] = f"{message} (the suggested change is an unsafe fix: check the numerics)"
    return result


def render(reports, out: TextIO) -> None:
    lines = lines_by_path(reports)
    document = {
        "source": SOURCE,
        "severity": "ERROR",
        "diagnostics": [diagnostic(finding, lines.get(finding.path)) for finding in all_findings(reports)],
    }
    json.dump(document, out, indent=2, ensure_ascii=False)
    out.write("\n")

"""Findings and edits in LSP's terms: 0-based lines, UTF-16 code-unit characters (LSP's default),
where findings count 1-based lines and code-point columns."""

from __future__ import annotations

from lsprotocol import types

from dtype_lint.findings import Edit, Finding
from dtype_lint.rule_docs import rule_url


def utf16_column(line_text: str, column: int) -> int:
    """The UTF-16 offset of 1-based code-point ``column`` in ``line_text``."""
    prefix = line_text[: max(0, column - 1)]
    return len(prefix.encode("utf-16-le")) // 2


def position(lines: list[str], line: int, column: int) -> types.Position:
    text = lines[line - 1] if 1 <= line <= len(lines) else ""
    return types.Position(line=max(0, line - 1), character=utf16_column(text, column))


def finding_range(lines: list[str], finding: Finding) -> types.Range:
    return types.Range(position(lines, finding.line, finding.column), position(lines, finding.end_line, finding.end_column))


def text_edit(lines: list[str], edit: Edit) -> types.TextEdit:
    return types.TextEdit(
        range=types.Range(position(lines, edit.line, edit.column), position(lines, edit.end_line, edit.end_column)),
        new_text=edit.content,
    )


# A finding is a warning, as ruff's server reports lint findings: Error is for what stops the
# file being checked at all (DTL001, like a syntax error). Lower confidence asks for less
# attention: a medium finding (a reachable configuration, a union of dtypes) is Information; a
# low one (a heuristic, shown only with min-confidence = "low") is a Hint.
SEVERITY_BY_CONFIDENCE = {
    "high": types.DiagnosticSeverity.Warning,
    "medium": types.DiagnosticSeverity.Information,
    "low": types.DiagnosticSeverity.Hint,
}
UNCHECKABLE_FILE = "DTL001"


def severity(finding: Finding) -> types.DiagnosticSeverity:
    if finding.code == UNCHECKABLE_FILE:
        return types.DiagnosticSeverity.Error
    return SEVERITY_BY_CONFIDENCE[finding.confidence.label]


def diagnostic(lines: list[str], finding: Finding) -> types.Diagnostic:
    # The message is the finding's own: editors show fixability through the code actions.
    return types.Diagnostic(
        range=finding_range(lines, finding),
        message=finding.message,
        severity=severity(finding),
        code=finding.code,
        code_description=types.CodeDescription(href=rule_url(finding.code)),
        source="dtype-lint",
        data={"name": finding.name, "confidence": finding.confidence.label},
    )


def overlaps(a: types.Range, b: types.Range) -> bool:
    start_a, end_a = (a.start.line, a.start.character), (a.end.line, a.end.character)
    start_b, end_b = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return start_a <= end_b and start_b <= end_a


def noqa_edit(lines: list[str], finding: Finding) -> types.TextEdit:
    """``# noqa: CODE`` at the end of the reported line (the code added to an existing noqa)."""
    from dtype_lint.suppress import NOQA

    text = lines[finding.line - 1] if 1 <= finding.line <= len(lines) else ""
    end = types.Position(line=finding.line - 1, character=utf16_column(text, len(text) + 1))
    match = NOQA.search(text)
    if match is not None and match.group("codes"):
        codes = match.group("codes").rstrip()
        insert_at = types.Position(line=finding.line - 1, character=utf16_column(text, match.start("codes") + len(codes) + 1))
        return types.TextEdit(range=types.Range(insert_at, insert_at), new_text=f", {finding.code}")
    return types.TextEdit(range=types.Range(end, end), new_text=f"  # noqa: {finding.code}")

"""The default, ruff-like output: ``path:line:col: CODE [*] message`` and the source line.
Paths, messages and source are shown through ``printable`` (a file's bytes never drive the terminal)."""

from __future__ import annotations

from typing import TextIO

from dtype_lint.findings import Finding, Safety
from dtype_lint.printable import printable
from dtype_lint.report import all_findings
from dtype_lint.report.sources import source_line
from dtype_lint.wording import plural


def location(finding: Finding) -> str:
    if finding.cell is not None:
        return f"{printable(finding.path)}:cell {finding.cell}:{finding.line}:{finding.column}"
    return f"{printable(finding.path)}:{finding.line}:{finding.column}"


def applicable(finding: Finding, unsafe_fixes: bool = False) -> bool:
    """Whether ``fix`` (``fix --unsafe-fixes`` when ``unsafe_fixes``) would apply the finding's fix."""
    return finding.fix is not None and (unsafe_fixes or finding.fix.safety is Safety.SAFE)


def headline(finding: Finding, show_fixable: bool = True, unsafe_fixes: bool = False) -> str:
    """``show_fixable``: ``[*]`` after the code of a finding whose fix `fix` would apply
    (``unsafe_fixes``: ``check --unsafe-fixes``, unsafe ones too)."""
    marker = " [*]" if show_fixable and applicable(finding, unsafe_fixes) else ""
    return f"{location(finding)}: {printable(finding.code)}{marker} {printable(finding.message)}"


def _source_excerpt(finding: Finding, lines: list[str] | None) -> list[str]:
    text = source_line(lines, finding, finding.line)
    if text is None:
        return []
    number = str(finding.line)
    gutter = " " * len(number)
    end = finding.end_column if finding.end_line == finding.line else len(text) + 1
    # The caret goes under the escaped text: measured on it.
    before, marked = printable(text[: finding.column - 1]), printable(text[finding.column - 1: end - 1])
    return [
        f"{gutter} |",
        f"{number} | {printable(text)}",
        f"{gutter} | {' ' * len(before)}{'^' * max(1, len(marked))}",
        "",
    ]


def summary(findings: list[Finding], unsafe_fixes: bool = False) -> list[str]:
    """ruff's closing lines; ``unsafe_fixes`` (``check --unsafe-fixes``): unsafe fixes count as
    fixable, with the command that applies them."""
    if not findings:
        return ["All checks passed!"]
    safe = sum(1 for f in findings if applicable(f))
    unsafe = sum(1 for f in findings if f.fix is not None and f.fix.safety is Safety.UNSAFE)
    lines = [f"Found {plural(len(findings), 'error')}."]
    if unsafe_fixes and safe + unsafe:
        lines.append(f"[*] {safe + unsafe} fixable with `dtype-lint fix --unsafe-fixes`.")
        return lines
    if safe:
        lines.append(f"[*] {safe} fixable with `dtype-lint fix`.")
    if unsafe:
        lines.append(f"({unsafe} more fixable with `dtype-lint fix --unsafe-fixes`.)")
    return lines


def render(reports, out: TextIO, show_summary: bool = True, unsafe_fixes: bool = False) -> None:
    lines_by_path = {report.path: report.lines for report in reports}
    findings = all_findings(reports)
    for finding in findings:
        out.write(headline(finding, unsafe_fixes=unsafe_fixes) + "\n")
        for line in _source_excerpt(finding, lines_by_path.get(finding.path)):
            out.write(line + "\n")
    for line in summary(findings, unsafe_fixes) if show_summary else ():
        out.write(line + "\n")

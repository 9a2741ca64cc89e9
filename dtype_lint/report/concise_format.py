"""``--format concise``: one line per finding, no source."""

from __future__ import annotations

from typing import TextIO

from dtype_lint.report import all_findings
from dtype_lint.report.text_format import headline, summary


def render(reports, out: TextIO, show_summary: bool = True, unsafe_fixes: bool = False) -> None:
    findings = all_findings(reports)
    for finding in findings:
        out.write(headline(finding, unsafe_fixes=unsafe_fixes) + "\n")
    for line in summary(findings, unsafe_fixes) if show_summary else ():
        out.write(line + "\n")

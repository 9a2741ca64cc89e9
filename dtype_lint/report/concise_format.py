"""``--format concise``: one line per finding, no source."""

from __future__ import annotations

from typing import TextIO

from dtype_lint.report import all_findings
from dtype_lint.report.text_format import headline, summary


def render(reports, out: TextIO, show_summary: bool = True) -> None:
    findings = all_findings(reports)
    for finding in findings:
        out.write(headline(finding) + "\n")
    for line in summary(findings) if show_summary else ():
        out.write(line + "\n")

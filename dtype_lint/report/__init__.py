"""Output formats, one module each; every one renders the same Finding objects."""

from __future__ import annotations

import importlib
from typing import TextIO

from dtype_lint.findings import Finding, sort_findings


def all_findings(reports) -> list[Finding]:
    return sort_findings([finding for report in reports for finding in report.findings])


# The formats people read end with a summary ("Found 3 errors."); -q leaves it out.
SUMMARISED = ("text", "concise")


def render(output_format: str, reports, out: TextIO, show_summary: bool = True, unsafe_fixes: bool = False) -> None:
    """``unsafe_fixes``: mark unsafe fixes as applicable too (``check --unsafe-fixes``)."""
    module = importlib.import_module(f"dtype_lint.report.{output_format.replace('-', '_')}_format")
    if output_format in SUMMARISED:
        module.render(reports, out, show_summary=show_summary, unsafe_fixes=unsafe_fixes)
    else:
        module.render(reports, out)

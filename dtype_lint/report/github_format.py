"""``--format github``: GitHub Actions workflow commands, one ``::error`` annotation per finding.

``::error file=PATH,line=L,endLine=L,col=C,endColumn=C,title=DTL201::message``, escaped as the
Actions runner unescapes them (actions/toolkit ``command.ts``): ``%``, CR and LF everywhere, and
``:`` and ``,`` inside property values; before that, ``printable`` escapes what a terminal would
act on (the Actions log is shown as a terminal's). A notebook finding is annotated on the file (its lines
are cell-relative, not lines of the JSON), with the cell and line at the start of the message.
"""

from __future__ import annotations

from typing import TextIO

from dtype_lint.findings import Finding
from dtype_lint.printable import printable
from dtype_lint.report import all_findings
from dtype_lint.report.sources import relative_path


def escape_data(text: str) -> str:
    return printable(text, keep_line_breaks=True).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    properties = [("file", relative_path(finding.path))]
    message = finding.message
    if finding.cell is None:
        properties += [
            ("line", str(finding.line)),
            ("endLine", str(finding.end_line)),
            ("col", str(finding.column)),
            ("endColumn", str(finding.end_column)),
        ]
    else:
        message = f"cell {finding.cell}, line {finding.line}, column {finding.column}: {message}"
    properties.append(("title", finding.code))
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::error {rendered}::{escape_data(message)}"


def render(reports, out: TextIO) -> None:
    for finding in all_findings(reports):
        out.write(annotation(finding) + "\n")

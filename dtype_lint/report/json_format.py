"""``--format json``: one object per finding, ordered by path, line, column, code."""

from __future__ import annotations

import json
from typing import TextIO

from dtype_lint.report import all_findings


def render(reports, out: TextIO) -> None:
    json.dump([finding.to_json() for finding in all_findings(reports)], out, indent=2)
    out.write("\n")

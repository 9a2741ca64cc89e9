"""``--format json-lines``: the objects of ``--format json``, one per line (ruff's ``json-lines``)."""

from __future__ import annotations

import json
from typing import TextIO

from dtype_lint.report import all_findings


def render(reports, out: TextIO) -> None:
    for finding in all_findings(reports):
        out.write(json.dumps(finding.to_json()) + "\n")

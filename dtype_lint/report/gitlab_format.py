"""``--format gitlab``: a GitLab Code Quality report (``artifacts: reports: codequality``).

Each finding is an issue with GitLab's required fields: ``description``, ``check_name`` (the
rule's code), ``fingerprint``, ``severity`` and ``location`` (``path`` relative to the project,
``$CI_PROJECT_DIR`` in a pipeline, else the working directory; ``positions`` 1-based, as ruff
writes them). The fingerprint is the finding's line-independent one (``dtype_lint.fingerprint``,
as the baseline and SARIF use) bound to the path, so an issue keeps its identity when lines move
and GitLab can tell new issues from old ones between pipelines. Severity follows confidence:
high is ``major``, medium ``minor``, low ``info``. A notebook finding points at the line of the
notebook's JSON that holds its cell line, and its description names the cell.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, TextIO

from dtype_lint.findings import Confidence, Finding
from dtype_lint.fingerprint import report_fingerprints
from dtype_lint.report import all_findings
from dtype_lint.report.sources import relative_path

SEVERITY = {Confidence.HIGH: "major", Confidence.MEDIUM: "minor", Confidence.LOW: "info"}


def _project_path(path: str) -> str:
    project = os.environ.get("CI_PROJECT_DIR")
    if project and path not in ("", "-"):
        relative = os.path.relpath(os.path.abspath(path), project)
        if not relative.startswith(".."):
            return relative.replace(os.sep, "/")
    return relative_path(path)


def _issue(finding: Finding, digest: str) -> dict[str, Any]:
    path = _project_path(finding.path)
    description = f"{finding.code}: {finding.message}"
    if finding.cell is not None:
        description = f"{finding.code}: cell {finding.cell}, line {finding.line}: {finding.message}"
        line = finding.file_line or 1
        positions = {"begin": {"line": line, "column": 1}, "end": {"line": line, "column": 1}}
    else:
        positions = {"begin": {"line": finding.line, "column": finding.column},
                     "end": {"line": finding.end_line, "column": finding.end_column}}
    return {
        "check_name": finding.code,
        "description": description,
        "severity": SEVERITY[finding.confidence],
        "fingerprint": hashlib.sha256(f"{path}\0{digest}".encode()).hexdigest()[:32],
        "location": {"path": path, "positions": positions},
    }


def gitlab_issues(reports) -> list[dict[str, Any]]:
    digests: dict[int, str] = {}
    for report in reports:
        for finding, fingerprint in zip(report.findings, report_fingerprints(report)):
            digests[id(finding)] = fingerprint.digest
    return [_issue(finding, digests[id(finding)]) for finding in all_findings(reports)]


def render(reports, out: TextIO) -> None:
    json.dump(gitlab_issues(reports), out, indent=2, ensure_ascii=False)
    out.write("\n")

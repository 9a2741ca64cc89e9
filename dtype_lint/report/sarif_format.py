"""``--format sarif``: SARIF 2.1.0, as GitHub code scanning ingests it (upload-sarif).

- ``tool.driver.rules`` lists every rule with its documentation and its page's URL
  (``helpUri``, ``dtype_lint.rule_docs``); results point at them by id and index.
- Locations are relative URIs (to the working directory, ``%SRCROOT%``) with 1-based regions;
  columns count code points (``columnKind``), as the findings do.
- ``partialFingerprints["dtypeLint/v1"]`` is the finding's line-independent fingerprint, the one
  the baseline records (``dtype_lint.fingerprint``): an alert survives lines inserted above it
  and is the same on every run.
- A finding with a fix carries it as ``fixes[].artifactChanges[].replacements``; unsafe fixes
  say so in their description.
- A notebook finding's region is the line of the notebook's JSON that holds the cell's line (a
  viewer opens the .ipynb there; no columns: JSON escapes shift them); the cell and the
  cell-relative position are in the region's and the result's ``properties`` and in the
  location's message. Its fix is left out: SARIF
  replacements address the notebook's JSON text, not a cell.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any, TextIO

from dtype_lint import __version__
from dtype_lint.findings import Finding, Safety
from dtype_lint.report import all_findings
from dtype_lint.fingerprint import report_fingerprints
from dtype_lint.report.sources import relative_path
from dtype_lint.rule_docs import HOMEPAGE, rule_url

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "dtypeLint/v1"
SRCROOT = "%SRCROOT%"


def _doc_section(doc: str, heading: str) -> str:
    match = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", doc, re.MULTILINE | re.DOTALL)
    return " ".join(match.group(1).split()) if match else ""


def rule_descriptor(rule) -> dict[str, Any]:
    doc = rule.doc()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary or rule.name},
        "fullDescription": {"text": _doc_section(doc, "What it does") or rule.summary or rule.name},
        "help": {"text": doc or rule.summary, "markdown": doc or rule.summary},
        "helpUri": rule_url(rule.code),
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["pytorch", "numerics"], "fixable": rule.fix_safety is not None},
    }


def artifact_location(path: str) -> dict[str, Any]:
    relative = relative_path(path)
    if os.path.isabs(relative):
        return {"uri": Path(relative).as_uri()}
    return {"uri": urllib.parse.quote(relative), "uriBaseId": SRCROOT}


def _region(line: int, column: int, end_line: int, end_column: int) -> dict[str, int]:
    # SARIF wants positions >= 1 and end >= start; a zero-width region (an insertion point) has
    # end == start.
    line, column, end_line, end_column = (max(1, value) for value in (line, column, end_line, end_column))
    if (end_line, end_column) < (line, column):
        end_line, end_column = line, column
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _fix(finding: Finding) -> dict[str, Any] | None:
    fix = finding.fix
    if fix is None or finding.cell is not None or not fix.edits:
        return None
    description = fix.description or "apply the suggested change"
    if fix.safety is Safety.UNSAFE:
        description = f"{description} (unsafe: may change numerics or behaviour; review it)"
    return {
        "description": {"text": description},
        "artifactChanges": [
            {
                "artifactLocation": artifact_location(finding.path),
                "replacements": [
                    {
                        "deletedRegion": _region(edit.line, edit.column, edit.end_line, edit.end_column),
                        "insertedContent": {"text": edit.content},
                    }
                    for edit in fix.edits
                ],
            }
        ],
    }


def _result(finding: Finding, rule_index: dict[str, int], fingerprint: str) -> dict[str, Any]:
    region = _region(finding.line, finding.column, finding.end_line, finding.end_column)
    location: dict[str, Any] = {"physicalLocation": {"artifactLocation": artifact_location(finding.path), "region": region}}
    properties: dict[str, Any] = {"confidence": finding.confidence.label}
    if finding.cell is not None:
        if finding.file_line is not None:
            region = {"startLine": finding.file_line}
            location["physicalLocation"]["region"] = region
        region["properties"] = {"cell": finding.cell, "line": finding.line, "column": finding.column}
        location["message"] = {"text": f"cell {finding.cell}, line {finding.line}"}
        properties["cell"] = finding.cell
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": "error",
        "message": {"text": finding.message},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
        "properties": properties,
    }
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    fix = _fix(finding)
    if fix is not None:
        result["fixes"] = [fix]
    return result


def sarif_log(reports) -> dict[str, Any]:
    from dtype_lint.rules import all_rules

    rules = all_rules()
    rule_index = {rule.code: index for index, rule in enumerate(rules)}
    digests: dict[int, str] = {}
    for report in reports:
        for finding, fingerprint in zip(report.findings, report_fingerprints(report)):
            digests[id(finding)] = fingerprint.digest
    results = [_result(finding, rule_index, digests[id(finding)]) for finding in all_findings(reports)]
    internal = [error for report in reports for error in report.internal_errors]
    invocation: dict[str, Any] = {"executionSuccessful": not internal}
    if internal:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": error}} for error in internal
        ]
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "dtype-lint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": HOMEPAGE,
                        "rules": [rule_descriptor(rule) for rule in rules],
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": Path.cwd().as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "invocations": [invocation],
                "results": results,
            }
        ],
    }


def render(reports, out: TextIO) -> None:
    json.dump(sarif_log(reports), out, indent=2, ensure_ascii=False)
    out.write("\n")

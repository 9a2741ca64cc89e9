"""``--format junit``: JUnit XML, as CI test-report viewers (GitLab, Jenkins, Azure) read it.

ruff's shape: one ``testsuite`` per file with findings, one failed ``testcase`` per finding
(``name`` the rule's code, ``classname`` the path without its suffix, ``line``/``column`` as
attributes), the message in ``failure``; a run without findings is one passing test case, so a
viewer shows the check ran. Notebook findings name their cell in the failure's text.
"""

from __future__ import annotations

import os
from typing import TextIO
from xml.etree import ElementTree

from dtype_lint.report import all_findings
from dtype_lint.report.sources import relative_path

SUITE = "dtype-lint"


def _where(finding) -> str:
    cell = f"cell {finding.cell}, " if finding.cell is not None else ""
    return f"{cell}line {finding.line}, col {finding.column}"


def junit_tree(reports) -> ElementTree.Element:
    findings = all_findings(reports)
    root = ElementTree.Element("testsuites", name=SUITE, tests=str(max(1, len(findings))),
                               failures=str(len(findings)), errors="0")
    if not findings:
        suite = ElementTree.SubElement(root, "testsuite", name=SUITE, tests="1", disabled="0", errors="0",
                                       failures="0", package=SUITE)
        ElementTree.SubElement(suite, "testcase", name="No errors found")
        return root
    by_path: dict[str, list] = {}
    for finding in findings:
        by_path.setdefault(relative_path(finding.path), []).append(finding)
    for path, found in by_path.items():
        suite = ElementTree.SubElement(root, "testsuite", name=path, tests=str(len(found)), disabled="0",
                                       errors="0", failures=str(len(found)), package=SUITE)
        for finding in found:
            case = ElementTree.SubElement(
                suite, "testcase", name=f"{SUITE}.{finding.code}", classname=os.path.splitext(path)[0],
                line=str(finding.line), column=str(finding.column),
            )
            failure = ElementTree.SubElement(case, "failure", message=finding.message)
            failure.text = f"{_where(finding)}, {finding.message}"
    return root


def render(reports, out: TextIO) -> None:
    root = junit_tree(reports)
    ElementTree.indent(root, space="    ")
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ElementTree.tostring(root, encoding="unicode"))
    out.write("\n")

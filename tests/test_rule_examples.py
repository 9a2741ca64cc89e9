"""Every rule's inline examples are tests: valid ones stay silent, invalid ones are flagged, and
applying an invalid example's fixes gives its ``fixed`` text."""

import libcst as cst
import pytest

from dtype_lint.config import Settings
from dtype_lint.edits import apply_edits
from dtype_lint.engine import check_text
from dtype_lint.findings import Confidence
from dtype_lint.rules import all_rules
from dtype_lint.rules.base import DOC_HEADINGS

RULES = [rule for rule in all_rules() if rule.code != "DTL001"]


def _findings(rule, source, targets=()):
    settings = Settings(select=(rule.code,), min_confidence=Confidence.LOW, **dict(targets))
    report = check_text(source, "example.py", settings, prefilter=False)
    assert not report.internal_errors, report.internal_errors
    return report.findings


VALID = [(rule.code, i, src) for rule in RULES for i, src in enumerate(rule.valid)]
INVALID = [(rule.code, i, ex) for rule in RULES for i, ex in enumerate(rule.invalid)]


@pytest.mark.parametrize("code,index,source", VALID, ids=[f"{c}-valid-{i}" for c, i, _ in VALID])
def test_valid_example_is_silent(code, index, source):
    rule = next(r for r in RULES if r.code == code)
    assert _findings(rule, source) == []


@pytest.mark.parametrize("code,index,example", INVALID, ids=[f"{c}-invalid-{i}" for c, i, _ in INVALID])
def test_invalid_example_is_flagged_and_fixed(code, index, example):
    rule = next(r for r in RULES if r.code == code)
    findings = _findings(rule, example.source, example.targets)
    assert findings, f"{code} did not flag:\n{example.source}"
    assert {f.code for f in findings} == {code}
    if example.fixed is not None:
        edits = [edit for f in findings if f.fix for edit in f.fix.edits]
        fixed = apply_edits(example.source, edits)
        assert fixed == example.fixed
        cst.parse_module(fixed)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_is_documented_with_examples(rule):
    doc = rule.doc()
    for heading in DOC_HEADINGS:
        assert heading in doc, f"{rule.code} doc lacks {heading!r}"
    assert rule.summary and rule.name
    assert len(rule.valid) >= 2 and len(rule.invalid) >= 2, f"{rule.code} needs examples"
    if rule.fix_safety is not None:
        assert any(ex.fixed is not None for ex in rule.invalid), f"{rule.code} offers a fix but has no fixed example"

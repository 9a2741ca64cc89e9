"""The prefilter skips libcst for files no enabled rule can speak about; it must never drop a finding.

Compared: ``check_text`` with and without the prefilter over every fixture, every rule's own
examples and the committed corpus sample. DTL001 is compared by presence only: a file the
prefilter skips is validated by ``ast`` instead of libcst, whose messages and columns differ.
"""

from pathlib import Path

import libcst
import pytest

from conftest import FIXTURES, ROOT
from dtype_lint.config import Settings
from dtype_lint.engine import PARSE_ERROR, check_text, enabled_rules, might_match
from dtype_lint.findings import Confidence
from dtype_lint.rules import all_rules

CORPUS_SAMPLE = ROOT / "tests" / "data" / "corpus_sample"
FIXTURE_FILES = sorted(FIXTURES.rglob("*.py"))
SAMPLE_FILES = sorted(CORPUS_SAMPLE.glob("*.py"))
RULES = [rule for rule in all_rules() if rule.code != PARSE_ERROR]


def findings(text: str, path: str, settings: Settings, prefilter: bool):
    report = check_text(text, path, settings, prefilter=prefilter)
    assert not report.internal_errors, report.internal_errors
    rule_findings = [f.to_json() for f in report.findings if f.code != PARSE_ERROR]
    return rule_findings, any(f.code == PARSE_ERROR for f in report.findings)


def assert_same_with_and_without(path: Path, settings: Settings = Settings()) -> None:
    text = path.read_text(encoding="utf-8")
    assert findings(text, str(path), settings, True) == findings(text, str(path), settings, False)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[str(p.relative_to(FIXTURES)) for p in FIXTURE_FILES])
def test_fixture_findings_are_identical_with_and_without_prefilter(path):
    assert_same_with_and_without(path)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[str(p.relative_to(FIXTURES)) for p in FIXTURE_FILES])
def test_fixtures_identical_at_low_confidence(path):
    # Low-confidence findings are where broad heuristics live; they must survive the prefilter too.
    assert_same_with_and_without(path, Settings(min_confidence=Confidence.LOW))


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.name for p in SAMPLE_FILES])
def test_corpus_sample_identical_with_and_without_prefilter(path):
    assert_same_with_and_without(path, Settings(min_confidence=Confidence.LOW))


def test_corpus_sample_is_present():
    assert len(SAMPLE_FILES) >= 15


@pytest.mark.parametrize("rule", RULES, ids=[rule.code for rule in RULES])
def test_each_rule_alone_keeps_its_invalid_examples(rule):
    """With only this rule enabled, its triggers alone decide: each invalid example must pass."""
    settings = Settings(select=(rule.code,), min_confidence=Confidence.LOW)
    for example in rule.invalid:
        assert might_match(example.source, [rule]), f"{rule.code}: no trigger in\n{example.source}"
        assert findings(example.source, "example.py", settings, True) == findings(
            example.source, "example.py", settings, False
        )


def test_prefilter_skips_libcst_when_no_trigger_occurs(monkeypatch):
    rules = enabled_rules(Settings(), "plain.py")
    text = "def add(a, b):\n    return a + b\n"
    assert not might_match(text, rules)

    def refuse(*_args, **_kwargs):
        raise AssertionError("libcst was asked to parse a file the prefilter should skip")

    monkeypatch.setattr(libcst, "parse_module", refuse)
    assert check_text(text, "plain.py", Settings()).findings == []


def test_skipped_file_with_a_syntax_error_still_gets_dtl001():
    report = check_text("def broken(:\n    pass\n", "broken.py", Settings())
    assert [f.code for f in report.findings] == [PARSE_ERROR]


def test_every_trigger_of_every_rule_lets_a_file_through():
    rules = enabled_rules(Settings(), "x.py")
    for rule in rules:
        for trigger in rule.triggers:
            assert might_match(f"x = 1\n# {trigger}\n", rules), (rule.code, trigger)

"""The prefilter skips libcst for files no enabled rule can speak about; it must never drop a finding.

Compared: ``check_text`` with and without the prefilter over every fixture, every rule's own
examples and the committed corpus sample. DTL001 is compared by presence only: a file the
prefilter skips is validated by ``ast`` instead of libcst, whose messages and columns differ.
"""

import ast
from pathlib import Path

import libcst
import pytest

from conftest import FIXTURES, ROOT
from dtype_lint.config import Settings
from dtype_lint.engine import PARSE_ERROR, check_text, enabled_rules, might_match
from dtype_lint.findings import Confidence
from dtype_lint.prefilter import code_words
from dtype_lint.rules import all_rules
from dtype_lint.rules.base import Rule

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
    for example in rule.invalid:
        settings = Settings(select=(rule.code,), min_confidence=Confidence.LOW, **dict(example.targets))
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


def test_every_trigger_of_every_rule_can_occur_in_a_program():
    for rule in RULES:
        for trigger in rule.triggers + tuple(t for group in rule.required_triggers for t in group):
            word = trigger.strip("\n")
            assert trigger in code_words(ast.parse(f"x = f({word!r})\n")), (rule.code, trigger)


@pytest.mark.parametrize(
    "source",
    [
        '"""The model runs in torch.float16 with autocast."""\n',  # docstrings are prose
        "# model.half()\nx = 1\n",  # and so are comments
        "def f():\n    'model.half() under autocast'\n    return 1\n",
    ],
)
def test_prose_does_not_wake_the_half_precision_rules(source):
    lowp_rules = [rule for rule in RULES if rule.code in ("DTL101", "DTL401", "DTL503")]
    assert not might_match(source, lowp_rules)


@pytest.mark.parametrize(
    ("source", "word"),
    [
        ("import numpy as np\n", "numpy"),
        ("from torch.cuda.amp import autocast as ac\n", "amp"),
        ("y = x.to(dtype=torch.float16)\n", "float16"),
        ("y = f(mixed_precision='fp16')\n", "fp16"),
        ("def step(self, scaler):\n    pass\n", "scaler"),
        ("x = -3.4e38\n", "literal_e38"),
        ("eps = 1e-8\n", "literal_em8"),
        ("mask = float('-inf')\n", "literal_inf"),
        ("big = float('6.5e4')\n", "literal_e4"),
        ("x = 2 ** 16\n", "__pow__"),
    ],
)
def test_code_words_hold_what_the_program_spells(source, word):
    assert f"\n{word}\n" in code_words(ast.parse(source))


def test_ordinary_numbers_give_no_word():
    assert "literal" not in code_words(ast.parse("x = [0, 1, 0.5, 2048, 1e-3]\n"))


def test_a_trigger_that_is_not_a_word_is_refused():
    with pytest.raises(ValueError, match="not a word"):
        type("BadRule", (Rule,), {"code": "DTL999", "name": "bad-rule", "triggers": (".half(",)})

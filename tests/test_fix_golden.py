"""Golden files: every ``fixtures/**/X.py`` with a sibling ``X.fixed.py`` is fixed with
``--unsafe-fixes`` and must give exactly ``X.fixed.py``.

Fixture files carry ``# expect: DTL...`` comments for the harness in test_fixtures.py; the fixer
keeps comments, so an input's expect comments would survive into its output while the expected
file marks only the findings that remain. Both sides are compared with expect comments removed.
Settings come from the nearest pyproject.toml, as for a user (``fixtures/fixes/transformers_4_56``
targets transformers 4.56, which turns DTL601's rename into a fix), and the target versions from
the nearest dependency declarations (``fixtures/requirements.txt``).
"""

from __future__ import annotations

import re

import libcst as cst
import pytest

from conftest import FIXTURES
from dtype_lint.resolver import SettingsResolver
from dtype_lint.fixer import FixOptions, fix_bytes
from dtype_lint.rules import all_rules

EXPECT_COMMENT = re.compile(r"[ \t]*#\s*expect:[^\r\n]*")
PAIRS = sorted(
    (path, path.with_name(path.name[: -len(".py")] + ".fixed.py"))
    for path in FIXTURES.rglob("*.py")
    if not path.name.endswith(".fixed.py") and path.with_name(path.name[: -len(".py")] + ".fixed.py").exists()
)


def _without_expectations(text: str) -> str:
    return EXPECT_COMMENT.sub("", text)


def _fix(path):
    # As for a user: the nearest config, and the targets read from the nearest declarations
    # (fixtures/requirements.txt: torch >= 2.9).
    settings = SettingsResolver()(str(path))
    return fix_bytes(path.read_bytes(), str(path), settings, FixOptions(unsafe=True, write=False))


@pytest.mark.parametrize("source,expected", PAIRS, ids=[str(s.relative_to(FIXTURES)) for s, _ in PAIRS])
def test_fix_gives_the_golden_file(source, expected):
    result = _fix(source)
    assert result.failure is None and not result.internal_errors, (result.failure, result.internal_errors)
    assert result.changed, f"{source.name}: no fix applied"
    actual = result.output.decode("utf-8")
    assert _without_expectations(actual) == _without_expectations(expected.read_text(encoding="utf-8"))
    cst.parse_module(actual)


@pytest.mark.parametrize("source,expected", PAIRS, ids=[str(s.relative_to(FIXTURES)) for s, _ in PAIRS])
def test_golden_file_is_a_fixed_point(source, expected):
    result = _fix(expected)
    assert not result.changed, result.diff



def test_every_fixable_rule_has_a_golden_file():
    fixed_codes: set[str] = set()
    for source, _ in PAIRS:
        fixed_codes.update(finding.code for finding in _fix(source).fixed)
    fixable = {rule.code for rule in all_rules() if rule.fix_safety is not None}
    assert sorted(fixable - fixed_codes) == [], "fixable rules without a golden fixture pair (fixtures/fixes/)"

"""The fixture harness: each file under fixtures/ marks its expected findings inline.

``# expect: DTL101`` (or ``# expect: DTL101, DTL303``) at the end of a line says exactly which
codes are reported on that line; the set of (code, line) must match exactly. Fixtures are checked
at the default settings (min-confidence medium), as a user would run the tool. A fixture that
stands for a project with declared versions says so in a comment, ``# fixture-settings:
target-torch = "2.1"`` (as if configured: DTL701 reads it as the oldest torch the project
supports, DTL203 as the torch that runs): the rules whose advice depends on the project's versions
read them (issue 21).
"""

import re
from collections import defaultdict

import pytest

from conftest import FIXTURES
from dtype_lint.config import OPT_IN_CODES, Settings
from dtype_lint.engine import check_text
from dtype_lint.rules import all_rules

EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DTL\d{3}(?:\s*,\s*DTL\d{3})*)")
CLEAN = re.compile(r"#\s*fixture-clean:\s*(?P<codes>DTL\d{3}(?:\s*,\s*DTL\d{3})*)")
FILES = sorted(p for p in FIXTURES.rglob("*.py"))
SETTING = re.compile(r'#\s*fixture-settings:\s*(?P<key>target-[a-z]+)\s*=\s*"(?P<value>[^"]+)"')


def fixture_settings(text: str) -> Settings:
    targets = {m.group("key").replace("-", "_"): m.group("value") for m in SETTING.finditer(text)}
    return Settings(**targets)


def expected(text: str) -> set[tuple[str, int]]:
    found = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code in re.split(r"\s*,\s*", match.group("codes")):
                found.add((code, number))
    return found


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_fixture_findings_match_expectations(path):
    text = path.read_text(encoding="utf-8")
    report = check_text(text, str(path), fixture_settings(text))
    assert not report.internal_errors, report.internal_errors
    actual = {(f.code, f.line) for f in report.findings}
    assert sorted(actual) == sorted(expected(text)), "\n".join(
        f"{f.line}: {f.code} {f.message}" for f in report.findings
    )


def test_every_rule_has_positive_and_clean_fixtures():
    positive = defaultdict(set)
    clean = defaultdict(set)
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        codes_here = {code for code, _ in expected(text)}
        for code in codes_here:
            positive[code].add(path)
        for match in CLEAN.finditer(text):
            for code in re.split(r"\s*,\s*", match.group("codes")):
                assert code not in codes_here, f"{path} is marked clean for {code} but expects it"
                clean[code].add(path)
    missing = []
    for rule in all_rules():
        if rule.code == "DTL001" or rule.code in OPT_IN_CODES:  # opt-in rules stay silent at the defaults
            continue
        if len(positive[rule.code]) < 2 or len(clean[rule.code]) < 2:
            missing.append(f"{rule.code}: {len(positive[rule.code])} positive, {len(clean[rule.code])} clean")
    assert not missing, "rules short of fixtures:\n" + "\n".join(missing)

"""Rules register themselves; a code registered twice fails loudly."""

import pytest

from dtype_lint.rules import all_rules, rule_for
from dtype_lint.rules.base import REGISTRY, DuplicateRuleError, Rule


def test_rules_register_themselves_in_code_order():
    rules = all_rules()
    codes = [rule.code for rule in rules]
    assert codes == sorted(codes) and len(codes) == len(set(codes))
    assert rule_for("dtl201").name == "deprecated-amp-api"
    names = [rule.name for rule in rules]
    assert len(names) == len(set(names)), "rule names must be unique too"


def test_duplicate_code_fails_loudly():
    all_rules()
    before = dict(REGISTRY)
    with pytest.raises(DuplicateRuleError, match="DTL201"):

        class Impostor(Rule):  # noqa: F841 - defined only to be rejected
            code = "DTL201"
            name = "impostor"

    assert REGISTRY == before


@pytest.mark.parametrize("code,name", [("DTL20", "x"), ("E501", "x"), ("DTL999", "Not_Kebab")])
def test_malformed_code_or_name_is_rejected(code, name):
    with pytest.raises(ValueError):
        type("Bad", (Rule,), {"code": code, "name": name})
    assert "DTL999" not in REGISTRY

"""README stays true: its two set-up commands come first, and its rule table lists every rule."""

import re

from conftest import ROOT
from dtype_lint.rules import all_rules

README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_rule_table_lists_every_registered_rule():
    listed = re.findall(r"^\| (DTL\d{3}) \| `([a-z0-9-]+)` \|", README, flags=re.M)
    assert listed == [(rule.code, rule.name) for rule in all_rules()]


def test_setup_commands_come_first_and_ci_runs_the_test_command():
    blocks = re.findall(r"```bash\n(.*?)\n```", README, flags=re.S)
    assert blocks[0].startswith("pip install . && dtype-lint check ")
    assert blocks[1] == "pip install -e '.[test]' && python -m pytest"
    assert blocks[1] in CI.splitlines()

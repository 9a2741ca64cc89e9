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


def test_ci_runs_both_readme_commands_in_a_venv_of_its_own():
    # CI reads the commands from README.md (so they are verbatim) and installs nothing beforehand:
    # the machine's Python must not hide a missing install step.
    lines = [line.strip() for line in CI.splitlines() if not line.strip().startswith("#")]
    assert 'python3 -m venv "$venv"' in lines
    assert '. "$venv/bin/activate"' in lines
    assert 'check_command="$(readme_command 0)"' in lines
    assert 'test_command="$(readme_command 1)"' in lines
    assert not [line for line in lines if "pip install" in line]


def test_test_extra_pins_torch_to_the_cpu_build_on_disk():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert "torch==2.13.0" in extras["test"]

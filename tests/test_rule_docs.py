"""Every rule has a page at a stable URL (docs/rules/<CODE>.md on main), generated from its class
docstring, and the outputs that can link to it do: SARIF ``helpUri``, reviewdog ``code.url``,
``dtype-lint rule --format json`` (the editor server's ``codeDescription.href`` is tested in
test_server.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

import jsonschema

from dtype_lint.rule_docs import HOMEPAGE, QUERIES_HEADING, explanation, query_modules, rule_url
from dtype_lint.rules import all_rules
from tests.conftest import ROOT, run_cli

RULE_DOCS = ROOT / "docs" / "rules"
GENERATOR = ROOT / "tools" / "generate_rule_docs.py"
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
DEFECT = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"


def _generator(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GENERATOR), *args], capture_output=True, text=True, timeout=120)


def test_rule_pages_are_up_to_date_with_the_docstrings():
    result = _generator("--check")
    assert result.returncode == 0, result.stderr  # run `python tools/generate_rule_docs.py`


def test_the_generator_finds_an_edited_page_and_a_page_of_no_rule_and_rewrites_them(tmp_path):
    pages = tmp_path / "rules"
    shutil.copytree(RULE_DOCS, pages)
    (pages / "DTL201.md").write_text("edited by hand\n")
    (pages / "DTL999.md").write_text("a rule that is gone\n")
    stale = _generator("--check", "--out", str(pages))
    assert stale.returncode == 1 and "DTL201.md, DTL999.md" in stale.stderr, stale.stderr
    assert _generator("--out", str(pages)).returncode == 0
    assert not (pages / "DTL999.md").exists()
    assert (pages / "DTL201.md").read_text(encoding="utf-8") == (RULE_DOCS / "DTL201.md").read_text(encoding="utf-8")
    assert _generator("--check", "--out", str(pages)).returncode == 0


def test_each_rule_url_is_its_page_on_the_main_branch_of_the_homepage():
    homepage = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]["Homepage"]
    assert HOMEPAGE == homepage
    for rule in all_rules():
        assert rule_url(rule.code) == f"{homepage}/blob/main/docs/rules/{rule.code}.md"
        page = (RULE_DOCS / f"{rule.code}.md").read_text(encoding="utf-8")
        assert f"# {rule.code}: {rule.name}\n" in page and explanation(rule, links=True) in page
    index = (RULE_DOCS / "README.md").read_text(encoding="utf-8")
    assert [line.split("](")[0][3:] for line in index.splitlines() if line.startswith("| [DTL")] == [
        rule.code for rule in all_rules()
    ]


def test_each_rule_names_the_facts_it_asks_and_the_modules_that_compute_them():
    assert query_modules("the dtype flow (facts/dtypes.py, computed by facts/flow/interpreter.py)") == [
        "facts/dtypes.py", "facts/flow/interpreter.py"]
    for rule in all_rules():
        assert rule.queries, f"{rule.code} does not say which facts of the analysis it asks (`queries`)"
        for query in rule.queries:
            modules = query_modules(query)
            assert modules, f"{rule.code}: {query!r} names no module under dtype_lint/"
            missing = [module for module in modules if not (ROOT / "dtype_lint" / module).is_file()]
            assert not missing, f"{rule.code}: {query!r} names {missing}, not modules under dtype_lint/"
        page = (RULE_DOCS / f"{rule.code}.md").read_text(encoding="utf-8")
        assert page.index("## Why is this bad?") < page.index(QUERIES_HEADING) < page.index("## Example"), rule.code


def test_rule_command_prints_what_the_rule_asks_the_analysis():
    text = run_cli("rule", "DTL509")
    assert text.returncode == 0, text.stderr
    assert f"{QUERIES_HEADING}\n\n- which ops have no float16/bfloat16 kernel" in text.stdout
    assert "`facts/op_support.py`" in text.stdout
    listed = json.loads(run_cli("rule", "--all", "--format", "json").stdout)
    assert [entry["queries"] for entry in listed] == [list(rule.queries) for rule in all_rules()]


def test_rule_command_prints_the_page_and_the_url():
    page = run_cli("rule", "DTL305", "--format", "markdown")
    assert page.returncode == 0, page.stderr
    assert page.stdout == (RULE_DOCS / "DTL305.md").read_text(encoding="utf-8")
    listed = run_cli("rule", "--all", "--format", "json")
    assert [entry["url"] for entry in json.loads(listed.stdout)] == [rule_url(rule.code) for rule in all_rules()]


def test_sarif_rules_link_their_pages(tmp_path):
    (tmp_path / "train.py").write_text(DEFECT)
    result = run_cli("check", "--select", "DTL201", "--format", "sarif", "train.py", cwd=tmp_path)
    log = json.loads(result.stdout)
    jsonschema.Draft7Validator(SCHEMA).validate(log)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [rule["helpUri"] for rule in rules] == [rule_url(rule.code) for rule in all_rules()]
    (finding,) = log["runs"][0]["results"]
    assert rules[finding["ruleIndex"]]["helpUri"].endswith("/docs/rules/DTL201.md")


def test_rdjson_codes_link_their_pages(tmp_path):
    (tmp_path / "train.py").write_text(DEFECT)
    result = run_cli("check", "--select", "DTL201", "--format", "rdjson", "train.py", cwd=tmp_path)
    (diagnostic,) = json.loads(result.stdout)["diagnostics"]
    assert diagnostic["code"] == {"value": "DTL201", "url": rule_url("DTL201")}

"""Each rule's documentation page and its stable URL.

A rule's class docstring is its documentation; ``docs/rules/<CODE>.md`` is that docstring rendered
as a page (``tools/generate_rule_docs.py`` writes them, a test keeps them in step), and
``rule_url`` is where the page lives on the project's main branch: the link editors
(LSP ``codeDescription.href``), SARIF (``helpUri``) and reviewdog (``code.url``) show. A code
never changes meaning, so its URL never changes either.

Importing this module imports no rule: the URL is needed on paths that render findings only.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

HOMEPAGE = "https://github.com/dtype-lint/dtype-lint"
# Where docs/rules/ is browsable: the main branch of the repository, as GitHub shows a file.
RULE_DOCS_BASE = f"{HOMEPAGE}/blob/main/docs/rules"
GENERATED_NOTE = (
    "<!-- Generated from the rule's class docstring by tools/generate_rule_docs.py: edit the docstring "
    "and rerun the script, not this file. -->"
)
INDEX_NAME = "README.md"
QUERIES_HEADING = "## What it asks the analysis"
WHY_HEADING = "## Why is this bad?"
# A module path under dtype_lint/ as a rule's ``queries`` name it: ``facts/flow/interpreter.py``.
MODULE_PATH = re.compile(r"\b((?:[a-z_]+/)*[a-z_]+\.py)\b")

FIX_WORDS = {
    None: "none",
    "safe": "safe (`dtype-lint fix`)",
    "unsafe": "unsafe (`dtype-lint fix --unsafe-fixes`)",
}


def rule_url(code: str) -> str:
    return f"{RULE_DOCS_BASE}/{code}.md"


def _source_link(rule) -> str:
    """The rule's module, relative to docs/rules/ (the repository's layout)."""
    module = inspect.getmodule(rule).__name__
    path = Path(*module.split(".")).with_suffix(".py").as_posix()
    return f"[`{path}`](../../{path})"


def query_modules(query: str) -> list[str]:
    """The module paths (relative to dtype_lint/) one of a rule's ``queries`` names."""
    return MODULE_PATH.findall(query)


def explanation(rule, *, links: bool = False) -> str:
    """The rule's docstring with a section on what it asks the analysis (its ``queries``) after
    "Why is this bad?"; ``links``: each module path links to its file (from docs/rules/)."""
    doc = rule.doc()
    if not rule.queries:
        return doc

    def item(query: str) -> str:
        if links:
            return MODULE_PATH.sub(lambda m: f"[`{m.group(1)}`](../../dtype_lint/{m.group(1)})", query)
        return MODULE_PATH.sub(lambda m: f"`{m.group(1)}`", query)

    section = QUERIES_HEADING + "\n\n" + "\n".join(f"- {item(query)}" for query in rule.queries)
    why = doc.find(WHY_HEADING)
    after_why = re.compile(r"^## ", flags=re.M).search(doc, why + len(WHY_HEADING)) if why >= 0 else None
    if after_why is None:
        return f"{doc}\n\n{section}"
    return f"{doc[:after_why.start()].rstrip()}\n\n{section}\n\n{doc[after_why.start():]}"


def rule_page(rule) -> str:
    """A rule's page: its code, name and summary, its fix, where it lives, then its docstring
    with what it asks the analysis."""
    safety = rule.fix_safety.value if rule.fix_safety else None
    return (
        f"{GENERATED_NOTE}\n\n"
        f"# {rule.code}: {rule.name}\n\n"
        f"{rule.summary}.\n\n"
        f"- Fix: {FIX_WORDS[safety]}\n"
        f"- Source: {_source_link(rule)} (its `valid` / `invalid` examples run as tests)\n\n"
        f"{explanation(rule, links=True)}\n"
    )


def index_page(rules) -> str:
    """docs/rules/README.md: every rule, linked to its page."""
    rows = "".join(
        f"| [{rule.code}]({rule.code}.md) | `{rule.name}` | {rule.summary.replace('|', '&#124;')} "
        f"| {rule.fix_safety.value if rule.fix_safety else ''} |\n"
        for rule in rules
    )
    return (
        f"{GENERATED_NOTE}\n\n"
        "# Rules\n\n"
        "Every rule, by code. A page's URL never changes: a code never changes meaning, and a retired\n"
        "code stays reserved. `dtype-lint rule CODE` prints the same text in a terminal.\n\n"
        "| code | name | what it finds | fix |\n"
        "|---|---|---|---|\n"
        f"{rows}"
    )


def pages(rules) -> dict[str, str]:
    """File name under docs/rules/ -> its text, for every rule and the index."""
    generated = {f"{rule.code}.md": rule_page(rule) for rule in rules}
    generated[INDEX_NAME] = index_page(rules)
    return generated

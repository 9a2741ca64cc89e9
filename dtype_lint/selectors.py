"""Rule selectors as people write them: a code (``DTL201``), a prefix (``DTL2``), ``ALL``, or a
rule's name (``deprecated-amp-api``, as ``dtype-lint rule`` accepts). A selector that names no
rule is an error: a typo must not turn into a silently empty selection."""

from __future__ import annotations

from dtype_lint.config import SELECTOR


def normalise_selector(text: str) -> str:
    """The code or prefix ``text`` stands for; ValueError when it names no rule."""
    from dtype_lint.rules import all_rules

    key = text.strip()
    rules = all_rules()
    for rule in rules:
        if rule.name == key.lower():
            return rule.code
    code = key.upper()
    if not SELECTOR.match(code):
        raise ValueError(f"invalid rule selector {text!r} (a code such as DTL201, a prefix, ALL or a rule name)")
    if code != "ALL" and not any(rule.code.startswith(code) for rule in rules):
        raise ValueError(f"unknown rule selector {text!r}: no rule code starts with it (see `dtype-lint rule --all`)")
    return code


def parse_selectors(text: str) -> tuple[str, ...]:
    """A comma-separated command-line list; an empty one is an error (``--select ''``)."""
    items = [item for item in text.split(",") if item.strip()]
    if not items:
        raise ValueError(f"expected comma-separated rule codes or names, got {text!r}")
    return tuple(normalise_selector(item) for item in items)

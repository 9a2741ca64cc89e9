"""``dtype-lint rule CODE`` prints a rule's doc; ``--all --format json`` lists every rule;
``--format markdown`` prints the page published under docs/rules/ (``dtype_lint.rule_docs``)."""

from __future__ import annotations

import argparse
import json
import sys

from dtype_lint.errors import UsageError
from dtype_lint.rule_docs import explanation, rule_page, rule_url


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("code", nargs="?", help="a rule code such as DTL201, or its name")
    parser.add_argument("--all", action="store_true", help="every rule")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")


def describe(rule) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary,
        "fix": rule.fix_safety.value if rule.fix_safety else None,
        "explanation": explanation(rule),
        "queries": list(rule.queries),
        "url": rule_url(rule.code),
    }


def run(args: argparse.Namespace) -> int:
    from dtype_lint.rules import all_rules

    rules = all_rules()
    if args.all:
        chosen = rules
    elif args.code:
        key = args.code.strip()
        chosen = [r for r in rules if r.code == key.upper() or r.name == key.lower()]
        if not chosen:
            raise UsageError(f"unknown rule {args.code!r} (try `dtype-lint rule --all`)")
    else:
        raise UsageError("give a rule code (e.g. DTL201) or --all")
    if args.format == "json":
        data = [describe(rule) for rule in chosen]
        json.dump(data if args.all else data[0], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if args.format == "markdown":
        sys.stdout.write("\n".join(rule_page(rule) for rule in chosen))
        return 0
    for index, rule in enumerate(chosen):
        if index:
            print()
        print(f"# {rule.name} ({rule.code})\n")
        print(f"{rule.summary}.\n")
        print(explanation(rule))
    return 0

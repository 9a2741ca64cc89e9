"""Write docs/rules/<CODE>.md (and its index) from the rules' class docstrings.

    python tools/generate_rule_docs.py          # rewrite the pages
    python tools/generate_rule_docs.py --check  # exit 1, naming them, when pages are out of date

A rule's docstring is its documentation; these pages are what its stable URL
(``dtype_lint.rule_docs.rule_url``) shows. Run it after adding a rule or editing a docstring;
tests/test_rule_docs.py fails until you do.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's dtype_lint, installed or not

from dtype_lint.rule_docs import pages  # noqa: E402
from dtype_lint.wording import plural  # noqa: E402
from dtype_lint.rules import all_rules  # noqa: E402


def out_of_date(directory: Path, expected: dict[str, str]) -> list[str]:
    """Names of pages missing, different from the docstrings, or left from a rule that is gone."""
    stale = [name for name, text in expected.items()
             if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != text]
    present = sorted(path.name for path in directory.glob("*.md")) if directory.is_dir() else []
    return sorted(stale + [name for name in present if name not in expected])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is out of date")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "rules", help="default: docs/rules")
    args = parser.parse_args(argv)
    expected = pages(all_rules())
    stale = out_of_date(args.out, expected)
    if args.check:
        if stale:
            print(f"out of date in {args.out}: {', '.join(stale)} (run python tools/generate_rule_docs.py)", file=sys.stderr)
            return 1
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name in stale:
        if name in expected:
            (args.out / name).write_text(expected[name], encoding="utf-8", newline="\n")
        else:
            (args.out / name).unlink()
    print(f"{plural(len(stale), 'page')} written or removed in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``# noqa``, ``# noqa: DTL301,DTL303`` and ``# dtype-lint: ignore[DTL301]`` comments.

The noqa syntax and matching are flake8's (same regular expression, prefix match on codes), so the
CLI and the flake8 plugin suppress exactly the same findings. A suppression applies on the reported
line and on the first line of the statement that holds it.
"""

from __future__ import annotations

import re

NOQA = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
OWN_IGNORE = re.compile(r"#\s*dtype-lint:\s*ignore(?:\[(?P<codes>[A-Za-z0-9,\s]*)\])?")
_SPLIT = re.compile(r"[,\s]+")

ALL = None  # a bare suppression: every code


def _codes(text: str | None) -> frozenset[str] | None:
    if not text:
        return ALL
    return frozenset(code.upper() for code in _SPLIT.split(text.strip()) if code)


def _suppressed_by(match: re.Match | None, code: str) -> bool:
    if match is None:
        return False
    codes = _codes(match.group("codes"))
    return codes is ALL or code in codes or code.startswith(tuple(codes))


def line_suppresses(line: str, code: str, *, use_noqa: bool = True) -> bool:
    if "#" not in line:
        return False
    if use_noqa and _suppressed_by(NOQA.search(line), code):
        return True
    return _suppressed_by(OWN_IGNORE.search(line), code)


def names_code(line: str, code: str) -> bool:
    """A suppression comment on ``line`` that names ``code`` (or a prefix of it); not a bare one."""
    if "#" not in line:
        return False
    for match in (NOQA.search(line), OWN_IGNORE.search(line)):
        if match is not None and _codes(match.group("codes")) is not ALL and _suppressed_by(match, code):
            return True
    return False


def is_suppressed(
    lines: list[str], code: str, line: int, statement_line: int, *, use_noqa: bool = True
) -> bool:
    for number in {line, statement_line}:
        if 1 <= number <= len(lines) and line_suppresses(lines[number - 1], code, use_noqa=use_noqa):
            return True
    return False

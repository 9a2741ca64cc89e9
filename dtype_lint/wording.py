"""Counts in messages: ``plural(1, "fix")`` is "1 fix", ``plural(2, "fix")`` "2 fixes"."""

from __future__ import annotations


def plural_noun(noun: str, count: int) -> str:
    """``noun`` as English spells it for ``count`` things (the last word of ``noun`` changes)."""
    if count == 1:
        return noun
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    return noun + "s"


def plural(count: int, noun: str) -> str:
    return f"{count} {plural_noun(noun, count)}"


def verb(count: int, singular: str, plural_form: str) -> str:
    """The verb agreeing with ``count`` things: ``verb(1, "matches", "match")``."""
    return singular if count == 1 else plural_form

"""Version numbers as the analysis compares them: the release part of a PEP 440 version
(``2.4.0a0+cu121`` is 2.4.0), and the lower bound a dependency specifier sets.

A lower bound is the oldest version the specifier admits: ``>=2.1`` and ``~=2.1`` and ``==2.1.*``
give 2.1; ``>2.3`` gives 2.3 (a 2.3.x may lack what 2.4 added, so treating it as 2.3 errs on the
careful side); ``<``, ``<=`` and ``!=`` set none. Poetry's ``^2.1`` and ``~2.1``, and a bare
``2.1`` (poetry's exact pin), count too.
"""

from __future__ import annotations

import re

_RELEASE = re.compile(r"\s*v?(\d+(?:\.\d+)*)")
_CLAUSE = re.compile(r"\s*(~=|===|==|>=|<=|!=|>|<|\^|~|=)?\s*(\S+)\s*")
_LOWER = {"~=", "===", "==", ">=", ">", "^", "~", "=", None}
# A Python target written ruff's way: "py312" is 3.12.
_RUFF_PYTHON = re.compile(r"py(\d)(\d+)")


def release(text: str | None) -> tuple[int, ...] | None:
    """``(2, 4, 0)`` for "2.4.0a0+cu121"; None when the text does not start with a number."""
    if text is None:
        return None
    match = _RELEASE.match(text)
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def lower_bound(specifier: str) -> str | None:
    """The oldest version ``specifier`` (comma-separated clauses) admits, or None."""
    bounds: list[tuple[tuple[int, ...], str]] = []
    for clause in specifier.split(","):
        if not clause.strip():
            continue
        match = _CLAUSE.fullmatch(clause)
        if match is None or match.group(1) not in _LOWER:
            continue
        number = release(match.group(2).rstrip(".*"))
        if number is not None:
            bounds.append((number, ".".join(str(part) for part in number)))
    # Several lower clauses (">=2.1, >=2.3"): all must hold, so the highest is the bound.
    return max(bounds)[1] if bounds else None


def python_version(text: str) -> str | None:
    """"3.12" for "3.12" or ruff's "py312"; None for anything else."""
    match = _RUFF_PYTHON.fullmatch(text)
    if match is not None:
        return f"{match.group(1)}.{int(match.group(2))}"
    return text if re.fullmatch(r"\d+(\.\d+)*", text) else None


def at_least(target: str | None, needed: tuple[int, ...]) -> bool | None:
    """Whether a project whose oldest supported version is ``target`` has what ``needed`` added:
    True, False, or None when the project declares no lower bound."""
    number = release(target)
    if number is None:
        return None
    return number >= needed


def spelled(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)

"""Version numbers as the analysis compares them: the release part of a PEP 440 version
(``2.4.0a0+cu121`` is 2.4.0), and the lower bound a dependency specifier sets.

A lower bound is the oldest version the specifier admits: ``>=2.1`` and ``~=2.1`` and ``==2.1.*``
give 2.1; ``>2.3`` gives 2.3 (a 2.3.x may lack what 2.4 added, so treating it as 2.3 errs on the
careful side); ``<``, ``<=`` and ``!=`` set none. Poetry's ``^2.1`` and ``~2.1``, and a bare
``2.1`` (poetry's exact pin), count too.

A ceiling is the other end, the newest version a specifier admits: ``<2.3`` (below 2.3),
``<=2.2.2``, ``==2.1.0``, ``==2.1.*`` and ``~=2.1.0`` (below 2.2), ``~=2.1`` and ``^2.1`` (below
3); ``>=``, ``>`` and ``!=`` set none. Users install the newest release a project admits, so a
premise true only on old releases holds for them only under a ceiling.
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


def _bumped(number: tuple[int, ...], position: int) -> tuple[int, ...]:
    """The first release after every ``number[:position + 1]``.*: ``(2, 1, 0), 1`` gives (2, 2)."""
    return (*number[:position], number[position] + 1)


def _clause_ceiling(operator: str | None, text: str) -> tuple[tuple[int, ...], bool] | None:
    """(version, inclusive) for one clause, or None when it sets no ceiling."""
    number = release(text.rstrip(".*"))
    if number is None:
        return None
    if operator == "<":
        return number, False
    if operator == "<=":
        return number, True
    if operator in ("==", "===", "=", None):  # a bare "2.1" is poetry's exact pin
        return (_bumped(number, len(number) - 1), False) if text.endswith(".*") else (number, True)
    if operator == "~=" and len(number) >= 2:  # ~=2.1.0 is >=2.1.0, ==2.1.*
        return _bumped(number, len(number) - 2), False
    if operator == "^":  # poetry: ^2.1 is <3, ^0.4 is <0.5
        leading = next((i for i, part in enumerate(number) if part), len(number) - 1)
        return _bumped(number, leading), False
    if operator == "~":  # poetry: ~2.1 is <2.2, ~2 is <3
        return _bumped(number, min(1, len(number) - 1)), False
    return None


def ceiling(specifier: str) -> tuple[tuple[int, ...], bool] | None:
    """The newest version ``specifier`` admits, as (version, inclusive), or None when unbounded."""
    found: list[tuple[tuple[int, ...], bool]] = []
    for clause in specifier.split(","):
        match = _CLAUSE.fullmatch(clause) if clause.strip() else None
        bound = _clause_ceiling(match.group(1), match.group(2)) if match is not None else None
        if bound is not None:
            found.append(bound)
    # Several ceilings ("<2.4, ==2.1.*"): all must hold, so the lowest is the one.
    return min(found, key=_ceiling_order, default=None)


def _ceiling_order(bound: tuple[tuple[int, ...], bool]) -> tuple[tuple[int, ...], bool]:
    """Ceilings in the order of what they admit: <2.3 before <=2.3 before <2.3.1."""
    version, inclusive = bound
    return version + (0,) * (8 - len(version)), inclusive


def newest_of(bounds: list[tuple[tuple[int, ...], bool] | None]) -> tuple[tuple[int, ...], bool] | None:
    """The highest of several ceilings; None (unbounded) when any is."""
    if not bounds or any(bound is None for bound in bounds):
        return None
    return max(bounds, key=_ceiling_order)


def only_before(specifier: str | None, needed: tuple[int, ...]) -> bool:
    """Whether every version ``specifier`` admits is older than ``needed``: False when it sets no
    ceiling (users install the newest release) or is unknown."""
    bound = ceiling(specifier) if specifier is not None else None
    if bound is None:
        return False
    version, inclusive = bound
    width = max(len(version), len(needed))
    version, needed = version + (0,) * (width - len(version)), needed + (0,) * (width - len(needed))
    return version < needed if inclusive else version <= needed


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

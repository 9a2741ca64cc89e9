"""libcst's parse, without re-validating every node the parser has just built.

Each libcst node runs ``_validate()`` from its constructor (``CSTNode.__post_init__``): about 30 %
of ``libcst.parse_module``'s time on real files (benchmarks/RESULTS.md). Validation protects trees
built by hand; a tree the parser built from source that parsed is valid by construction (libcst's
own source says as much: "avoid validating the tree when parsing a file"). So the engine parses
with validation switched off for the duration of the call; nodes that rules or fixes build later
are validated as usual.
"""

from __future__ import annotations

import libcst as cst


def _skip_validation(self) -> None:
    pass


def parse_module(text: str) -> cst.Module:
    """``libcst.parse_module(text)``, minus the per-node validation (same tree, same errors)."""
    original = cst.CSTNode.__dict__.get("__post_init__")
    if original is None:  # a libcst that validates elsewhere: nothing to switch off
        return cst.parse_module(text)
    cst.CSTNode.__post_init__ = _skip_validation
    try:
        return cst.parse_module(text)
    finally:
        cst.CSTNode.__post_init__ = original

"""Names in CPython's ``ast`` trees, shared by the summary's modules."""

from __future__ import annotations

import ast


def dotted(node: ast.AST) -> str | None:
    """``self.model.encoder`` for that attribute chain; None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))

"""``list(ast.iter_child_nodes(node))``, faster: the walks over CPython's tree (the prefilter's code
words, the depth guard, the project summary) visit every node of every file.

``ast.iter_child_nodes`` goes through two generators and a ``getattr`` by name per field; here a
function generated once per node class reads its fields directly.
"""

from __future__ import annotations

import ast


class _Getters(dict):
    """node class -> the function listing its children (nodes, in field order)."""

    def __missing__(self, kind: type):
        lines = ["def children(node):", "    found = []"]
        for name in kind._fields:
            lines += [
                f"    value = getattr(node, {name!r}, None)",
                "    if type(value) is list:",
                "        found.extend([item for item in value if isinstance(item, AST)])",
                "    elif isinstance(value, AST):",
                "        found.append(value)",
            ]
        lines.append("    return found")
        namespace = {"AST": ast.AST}
        exec("\n".join(lines), namespace)  # noqa: S102 - field names of CPython's own node classes
        getter = self[kind] = namespace["children"]
        return getter


GETTERS = _Getters()


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The children of ``node``, as ``ast.iter_child_nodes`` yields them (a new list)."""
    return GETTERS[type(node)](node)

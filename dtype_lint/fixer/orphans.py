"""Imports the fixes left unused: ``from torch.cuda.amp import GradScaler, autocast`` once every
``GradScaler()`` and ``autocast()`` became ``torch.amp....`` (flake8 would report F401).

A name is dropped only when the original text used it and the fixed text does not, anywhere
outside import statements (strings and comments count as uses: an ``__all__`` entry keeps it), and only
from a ``from torch... import`` statement on a line of its own with no comment (a ``# noqa``
there says the import is wanted). The whole statement goes when none of its names is left.
"""

from __future__ import annotations

import re

import libcst as cst

_COMMENT = re.compile(r"#")


def _uses(name: str, text: str) -> int:
    """Bare mentions of ``name`` (not ``x.name``)."""
    return len(re.findall(rf"(?<![\w.]){re.escape(name)}\b", text))


def _module_name(node: cst.ImportFrom) -> str:
    parts: list[str] = []
    module = node.module
    while isinstance(module, cst.Attribute):
        parts.append(module.attr.value)
        module = module.value
    if isinstance(module, cst.Name):
        parts.append(module.value)
    return ".".join(reversed(parts))


def _local_name(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None:
        return alias.asname.name.value if isinstance(alias.asname.name, cst.Name) else None
    return alias.name.value if isinstance(alias.name, cst.Name) else None


class _WithoutImports(cst.CSTTransformer):
    """The code that is not an import statement: where a name is used."""

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in updated_node.body):
            return cst.RemoveFromParent()
        return updated_node


def _code_outside_imports(module: cst.Module) -> str:
    return module.visit(_WithoutImports()).code


class _DropOrphans(cst.CSTTransformer):
    def __init__(self, module: cst.Module, original_uses: str, fixed_uses: str) -> None:
        self.module, self.original_uses, self.fixed_uses = module, original_uses, fixed_uses
        self.dropped = 0

    def _orphaned(self, alias: cst.ImportAlias) -> bool:
        name = _local_name(alias)
        return name is not None and _uses(name, self.original_uses) > 0 and _uses(name, self.fixed_uses) == 0

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if len(updated_node.body) != 1 or not isinstance(updated_node.body[0], cst.ImportFrom):
            return updated_node
        node = updated_node.body[0]
        if node.relative or isinstance(node.names, cst.ImportStar) or not _module_name(node).startswith("torch"):
            return updated_node
        code = self.module.code_for_node(original_node)
        if _COMMENT.search(code):
            return updated_node
        kept = [alias for alias in node.names if not self._orphaned(alias)]
        if len(kept) == len(node.names):
            return updated_node
        self.dropped += len(node.names) - len(kept)
        if not kept:
            return cst.RemoveFromParent()
        # The last name takes the statement's own ending: a trailing comma (and its newline) or none.
        kept[-1] = kept[-1].with_changes(comma=node.names[-1].comma)
        return updated_node.with_changes(body=[node.with_changes(names=kept)])


def drop_orphaned_imports(original: str, fixed: str) -> str:
    """``fixed`` without the torch imports its fixes orphaned (``fixed`` itself when none)."""
    try:
        module = cst.parse_module(fixed)
        original_uses = _code_outside_imports(cst.parse_module(original))
    except Exception:  # noqa: BLE001 - the caller verified it parses; never fail a fix over this
        return fixed
    transformer = _DropOrphans(module, original_uses, _code_outside_imports(module))
    new_module = module.visit(transformer)
    return new_module.code if transformer.dropped else fixed

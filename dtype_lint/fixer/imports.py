"""How a fix spells a module it needs, and the one edit that imports it when the file does not.

A fix that writes ``torch.amp.autocast`` must write ``T.amp.autocast`` in a file that says
``import torch as T``. Only imports at the top level of the module count: a name bound inside a
``try``/``except ImportError`` fallback, an ``if`` or a function may not exist where the fix lands,
and such a file manages the import on purpose, so no fix is offered there rather than adding a
second, unconditional import beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from dtype_lint.facts.names import ImportTable
from dtype_lint.findings import Edit

if TYPE_CHECKING:
    from dtype_lint.context import FileContext


class ModuleReference(NamedTuple):
    """``name`` is what fix content writes for the module; ``edits`` adds its import (or is empty)."""

    name: str
    edits: tuple[Edit, ...]


def _imports_only(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _is_future_import(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.ImportFrom)
        and isinstance(statement.body[0].module, cst.Name)
        and statement.body[0].module.value == "__future__"
    )


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _import_edit(ctx: "FileContext", module: str) -> Edit:
    """``import module`` before the first top-level import (after the docstring and
    ``from __future__`` imports), else before the first statement after them."""
    body = list(ctx.module.body)
    index = 0
    if body and _is_docstring(body[0]):
        index = 1
    while index < len(body) and _is_future_import(body[index]):
        index += 1
    rest = body[index:]
    line_text = f"import {module}"
    if not rest:
        if not body:
            return Edit(1, 1, 1, 1, line_text + ctx.newline)
        end = ctx.position(body[-1]).end
        return Edit(end.line, end.column + 1, end.line, end.column + 1, ctx.newline + line_text)
    target = next((statement for statement in rest if _imports_only(statement)), rest[0])
    line = ctx.position(target).start.line
    return Edit(line, 1, line, 1, line_text + ctx.newline)


def module_reference(ctx: "FileContext", module: str) -> ModuleReference | None:
    """How a fix in this file spells ``module`` (e.g. ``"torch"``), or None when no fix should
    be offered because the file imports it only conditionally."""
    top_level = cst.Module(body=[statement for statement in ctx.module.body if _imports_only(statement)])
    spellings = ImportTable.from_module(top_level).local_names_for(module)
    if spellings:
        return ModuleReference(spellings[0], ())
    head = module.split(".")[0]
    if ctx.names.resolve_dotted(head):
        # Bound somewhere, but not by a top-level import: a fallback, a lazy or a guarded import.
        return None
    return ModuleReference(module, (_import_edit(ctx, module),))

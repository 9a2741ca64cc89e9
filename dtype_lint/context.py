"""Everything a rule may ask about one file: its text, its tree and the facts computed from it.

Costly facts (positions, parents, the dtype flow) are computed on first use, once per file, and
shared by every rule.
"""

from __future__ import annotations

import functools

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from dtype_lint.config import Settings
from dtype_lint.facts.names import ImportTable


class FileContext:
    def __init__(self, path: str, text: str, module: cst.Module, settings: "Settings | None" = None) -> None:
        self.path = path
        # The run's settings, for rules whose advice depends on them (DTL601's target-transformers).
        self.settings = settings if settings is not None else Settings()
        self.text = text
        self.lines = text.splitlines()
        self.newline = "\r\n" if "\r\n" in text else "\n"
        # unsafe_skip_copy: rules see the very nodes the positions are keyed by.
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.module = self.wrapper.module
        self.names = ImportTable.from_module(self.module)
        # Maintained by the runner during the traversal: the nodes above the current one.
        self.ancestors: list[cst.CSTNode] = []

    @functools.cached_property
    def _positions(self):
        return self.wrapper.resolve(PositionProvider)

    @functools.cached_property
    def _parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        # Read from the nodes' fields: libcst's ParentNodeProvider rebuilds every node through a
        # visitor and cost more than the parse itself. Whitespace and punctuation get no parent.
        from dtype_lint.facts.training import child_nodes

        parents: dict[cst.CSTNode, cst.CSTNode] = {}
        stack: list[cst.CSTNode] = [self.module]
        while stack:
            node = stack.pop()
            for child in child_nodes(node):
                parents[child] = node
                stack.append(child)
        return parents

    @functools.cached_property
    def flow(self):
        """The dtype-flow facts of this file (see ``dtype_lint.facts.dtypes``)."""
        from dtype_lint.facts.dtypes import analyze

        return analyze(self)

    @functools.cached_property
    def scaler(self):
        """The GradScaler protocol of this file: events in order (see ``dtype_lint.facts.scaler``)."""
        from dtype_lint.facts.scaler import analyze

        return analyze(self)

    def position(self, node: cst.CSTNode) -> CodeRange:
        return self._positions[node]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def enclosing(self, node: cst.CSTNode, *kinds: type) -> cst.CSTNode | None:
        """The nearest ancestor of ``node`` that is one of ``kinds``."""
        current = self.parent(node)
        while current is not None and not isinstance(current, kinds):
            current = self.parent(current)
        return current

    def enclosing_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        current: cst.CSTNode | None = node
        while current is not None and not isinstance(
            current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
        ):
            current = self.parent(current)
        return current

    def statement_first_line(self, node: cst.CSTNode) -> int:
        statement = self.enclosing_statement(node)
        return self.position(statement if statement is not None else node).start.line

    def code_for(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

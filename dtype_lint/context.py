"""Everything a rule may ask about one file: its text, its tree and the facts computed from it.

Costly facts (positions, parents, the dtype flow) are computed on first use, once per file, and
shared by every rule.
"""

from __future__ import annotations

import functools

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper

from dtype_lint.config import Settings
from dtype_lint.facts.names import ImportTable, NameBindings
from dtype_lint.positions import Positions


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
        # class name -> ClassWorld: the precision the project pass found each class cast to
        # elsewhere (dtype_lint/project/); None in a plain, file-local check.
        self.worlds = None
        # Maintained by the runner during the traversal: the nodes above the current one.
        self.ancestors: list[cst.CSTNode] = []

    @functools.cached_property
    def _positions(self) -> Positions:
        # Asked for only when a rule reports or words a message (see positions.py).
        return Positions(self.module, self.text)

    @functools.cached_property
    def _tree_shape(self):
        """One source-order walk of the tree, read from the nodes' fields (libcst's own visitors
        and ParentNodeProvider rebuild every node and cost more than the parse): each node's
        parent, and the walk itself as ``(node, entering)`` events, which the runner replays
        instead of walking again. Whitespace and punctuation are left out."""
        from dtype_lint.facts.training import CHILD_GETTERS

        # keyed by ``id(node)``: libcst's ``__hash__`` is a Python-level call (``id(self)``), paid
        # once per node here and once per lookup; the nodes live as long as the module does
        parents: dict[int, cst.CSTNode] = {}
        events: list[tuple[cst.CSTNode, bool]] = []
        append = events.append
        leave = object()
        stack: list = [self.module]
        pop, push, extend = stack.pop, stack.append, stack.extend
        while stack:
            node = pop()
            if node is leave:
                append((pop(), False))
                continue
            append((node, True))
            push(node)
            push(leave)
            children = CHILD_GETTERS[type(node)](node)
            if children:
                for child in children:
                    parents[id(child)] = node
                children.reverse()
                extend(children)
        return parents, events

    @functools.cached_property
    def _source_order(self) -> dict[int, tuple[int, int]]:
        """``id(node)`` -> its ``(enter, exit)`` numbers (keyed by id, as ``_tree_shape``'s parents)."""
        enter: dict[int, int] = {}
        order: dict[int, tuple[int, int]] = {}
        for index, (node, entering) in enumerate(self.walk_events()):
            key = id(node)
            if entering:
                enter[key] = index
            else:
                order[key] = (enter[key], index)
        return order

    @functools.cached_property
    def all_nodes(self) -> list[cst.CSTNode]:
        """Every syntax node of the file in source order (the module first), from the one walk:
        what ``walk(ctx.module, into_definitions=True)`` yields, without walking again."""
        return [node for node, entering in self.walk_events() if entering]

    def walk_events(self) -> list[tuple[cst.CSTNode, bool]]:
        """The tree in source order as ``(node, entering)``: a node's entry, its subtree, its exit."""
        return self._tree_shape[1]

    @property
    def _parents(self) -> dict[int, cst.CSTNode]:
        """``id(node)`` -> its parent node."""
        return self._tree_shape[0]

    def source_order(self, node: cst.CSTNode) -> tuple[int, int]:
        """``(enter, exit)`` numbers of ``node`` in a source-order walk: node A ends before node B
        starts exactly when ``exit(A) < enter(B)``."""
        return self._source_order[id(node)]

    @functools.cached_property
    def bindings(self) -> NameBindings:
        """Where the file binds plain names other than by import (asked for by fixes that rewrite
        a call through a name, and by DTL201's value uses)."""
        return NameBindings(self.all_nodes, self.names)

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
        return self._parents.get(id(node))

    def enclosing(self, node: cst.CSTNode, *kinds: type) -> cst.CSTNode | None:
        """The nearest ancestor of ``node`` that is one of ``kinds``."""
        exact = _leaf_classes(kinds)
        if exact is not None:  # the usual ask (FunctionDef, ClassDef): compared by type, not isinstance
            parents = self._parents
            current = parents.get(id(node))
            while current is not None and type(current) not in exact:
                current = parents.get(id(current))
            return current
        current = self.parent(node)
        while current is not None and not isinstance(current, kinds):
            current = self.parent(current)
        return current

    def is_within(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        """``node`` lies inside ``ancestor``."""
        current = self.parent(node)
        while current is not None and current is not ancestor:
            current = self.parent(current)
        return current is not None

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


@functools.lru_cache(maxsize=None)
def _leaf_classes(kinds: tuple[type, ...]) -> frozenset[type] | None:
    """``kinds`` as a set when none has subclasses (``type(x) in`` it then says what
    ``isinstance`` does, without the Python-level ``__instancecheck__`` of libcst's ABCs)."""
    if any(not isinstance(kind, type) or kind.__subclasses__() for kind in kinds):
        return None
    return frozenset(kinds)

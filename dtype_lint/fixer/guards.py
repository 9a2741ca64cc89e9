"""Branches a fix must not touch automatically: import fallbacks and version checks.

Code in ``try: ... except ImportError:`` (or ``AttributeError``, or ``TypeError`` for a changed
signature) and under ``if hasattr(torch, "amp"):`` / ``if version.parse(torch.__version__) >=
...:`` exists precisely to keep working on several library versions; rewriting the old spelling there to the new API
breaks the very versions the branch was written for (TorchFix rewrote such a fallback). Such
fixes are reported as skipped, for a person to decide.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from dtype_lint.facts.names import ImportTable, dotted_name

FALLBACK_ERRORS = ("ImportError", "ModuleNotFoundError", "AttributeError", "TypeError")
# Names that make an ``if`` a version check: ``__version__``, ``version.parse``,
# ``sys.version_info``, ``is_torch_version``, transformers' ``is_torch_greater_or_equal``.
VERSION_NAME = re.compile(r"version|(greater|less|older|newer)_(or_equal|than)", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class GuardedRange:
    """1-based (line, column) bounds, end exclusive, and why fixes stay out."""

    start: tuple[int, int]
    end: tuple[int, int]
    reason: str


def _catches_fallback_errors(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:  # a bare ``except:`` around an import or API probe
        return True
    kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    names = [kind.value if isinstance(kind, cst.Element) else kind for kind in kinds]
    return any((dotted_name(name) or "").split(".")[-1] in FALLBACK_ERRORS for name in names)


class _GuardFinder(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, names: ImportTable) -> None:
        super().__init__()
        self.names = names
        self.ranges: list[GuardedRange] = []

    def _add(self, first: cst.CSTNode, last: cst.CSTNode, reason: str) -> None:
        start = self.get_metadata(PositionProvider, first).start
        end = self.get_metadata(PositionProvider, last).end
        self.ranges.append(GuardedRange((start.line, start.column + 1), (end.line, end.column + 1), reason))

    def visit_Try(self, node: cst.Try) -> None:
        if node.handlers and any(_catches_fallback_errors(h) for h in node.handlers):
            # The try body and its handlers; ``else``/``finally`` run on every version.
            self._add(node, node.handlers[-1], "inside a try/except compatibility fallback")

    def visit_If(self, node: cst.If) -> None:
        if self._is_version_check(node.test):
            self._add(node, node, "inside a version-check branch")

    def _is_version_check(self, test: cst.BaseExpression) -> bool:
        for node in _walk(test):
            if isinstance(node, cst.Name) and VERSION_NAME.search(node.value):
                return True
            if isinstance(node, cst.Attribute) and VERSION_NAME.search(node.attr.value):
                return True
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Name)
                and node.func.value in ("hasattr", "getattr")
                and node.args
                and self.names.qualified_names(node.args[0].value)
            ):
                # ``hasattr(torch, "amp")`` probes a library; ``hasattr(model, "module")`` does not.
                return True
        return False


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)


def guarded_ranges(module: cst.Module, names: ImportTable) -> list[GuardedRange]:
    finder = _GuardFinder(names)
    MetadataWrapper(module, unsafe_skip_copy=True).visit(finder)
    return finder.ranges

"""Where each syntax node of a module is: libcst's ``PositionProvider`` ranges, from a cheaper pass.

libcst's provider runs the module's code generation once, counting lines and columns token by
token and keeping a ``CodeRange`` of two ``CodePosition`` objects for every node, whitespace and
punctuation included: 110 bytes per byte of source (a 1 MB file: 40 MB for a few findings) and
more time than the parse itself. Here the same code generation only adds up token lengths, keeps
one integer per node that is not whitespace (its start and end offsets), and turns the offsets of the nodes asked
about into lines and columns. The ranges are libcst's (tests/test_robustness.py compares them);
a whitespace node, which no rule has asked about, falls back to libcst's provider.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from bisect import bisect_right

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange, PositionProvider

# libcst's own definition of a line break (position_provider.NEWLINE_RE)
_NEWLINE = re.compile(r"\r\n?|\n")
_SHIFT = 32  # an offset below 4 GiB: start and end packed into one int
_MASK = (1 << _SHIFT) - 1
_UNRECORDED: dict[type, bool] = {}


def _unrecorded(kind: type) -> bool:
    """Whitespace, blank lines and comments (half of all nodes): no rule asks where they are, and
    no node takes its range from one (punctuation it may: ``from m import *`` ends at its ``*``)."""
    skip = _UNRECORDED.get(kind)
    if skip is None:
        skip = _UNRECORDED[kind] = kind.__module__ == "libcst._nodes.whitespace"
    return skip


@dataclasses.dataclass
class _OffsetState(CodegenState):
    """Code generation that writes nothing: it counts characters and records node spans, with the
    same rules as libcst's ``PositionProvidingCodegenState`` (a syntactic range, when a node
    records one, wins over the whitespace-inclusive one)."""

    offset: int = 0
    spans: dict = dataclasses.field(default_factory=dict)
    starts: list = dataclasses.field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.offset += len(value)
        if not self.tokens:  # the module asks whether anything was written (an empty file's newline)
            self.tokens.append(value)

    def pop_trailing_newline(self) -> None:
        pass  # libcst's positions count the popped newline too

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.starts.pop()
        if node not in self.spans and not _unrecorded(type(node)):
            self.spans[node] = start << _SHIFT | self.offset

    @contextlib.contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None:
                start = self.spans[start_node] >> _SHIFT
            if end_node is not None:
                end = self.spans[end_node] & _MASK
            self.spans[node] = start << _SHIFT | end


class Positions:
    """``positions[node]``: the node's ``CodeRange``, as libcst's ``PositionProvider`` gives it."""

    def __init__(self, module: cst.Module, text: str) -> None:
        """``text``: the module's code (what it was parsed from)."""
        self._module = module
        state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
        module._codegen(state)
        self._spans = state.spans
        if not module.has_trailing_newline:  # the newline libcst writes, counts, then takes back
            text += module.default_newline
        self._line_starts = [0] + [match.end() for match in _NEWLINE.finditer(text)]
        self._libcst: dict | None = None

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        span = self._spans.get(node)
        if span is None:
            if self._libcst is None:  # a whitespace node: libcst's own pass, once
                provider = PositionProvider()
                provider._gen_impl(self._module)
                self._libcst = provider._computed
            return self._libcst[node]
        return CodeRange(self._position(span >> _SHIFT), self._position(span & _MASK))

    def _position(self, offset: int) -> CodePosition:
        line = bisect_right(self._line_starts, offset)
        return CodePosition(line, offset - self._line_starts[line - 1])

"""Applying text edits to source: the one place positions turn into string offsets."""

from __future__ import annotations

from typing import Iterable

from dtype_lint.findings import Edit


class OverlappingEdits(ValueError):
    pass


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for index, char in enumerate(text):
        if char == "\n":
            offsets.append(index + 1)
    return offsets


def _offset(offsets: list[int], text: str, line: int, column: int) -> int:
    if line - 1 >= len(offsets):  # just past the last line (insertion at end of file)
        return len(text)
    return min(offsets[line - 1] + column - 1, len(text))


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with every edit applied. Insertions at one point keep the order given."""
    offsets = _line_offsets(text)
    spans = []
    for order, edit in enumerate(edits):
        start = _offset(offsets, text, edit.line, edit.column)
        end = _offset(offsets, text, edit.end_line, edit.end_column)
        if end < start:
            raise OverlappingEdits(f"edit ends before it starts: {edit}")
        spans.append((start, end, order, edit.content))
    spans.sort()
    previous_end = -1
    for start, end, _, _ in spans:
        if start < previous_end:
            raise OverlappingEdits("edits overlap")
        previous_end = max(previous_end, end)
    pieces = []
    cursor = 0
    for start, end, _, content in spans:
        pieces.append(text[cursor:start])
        pieces.append(content)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)

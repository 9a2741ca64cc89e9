"""The fixer's span arithmetic, against ``dtype_lint.edits.apply_edits``, over generated edits:
edits chosen as non-conflicting always apply, each lands where the fixer thinks it does, and
every character outside them is kept and found again at its mapped offset."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dtype_lint.edits import apply_edits
from dtype_lint.findings import Edit
from dtype_lint.fixer.core import _conflicts, _map_offset, _new_spans, _position, _Round

TEXT = st.text(alphabet="ab \n", max_size=40)
RAW_EDITS = st.lists(
    st.tuples(st.integers(0, 45), st.integers(0, 6), st.text(alphabet="XY\n", max_size=4)), max_size=8
)


def _choose(text: str, raw) -> list[tuple[int, int, str]]:
    taken: set[tuple[int, int, str]] = set()
    for start, length, content in raw:
        start = min(start, len(text))
        span = (start, min(start + length, len(text)), content)
        if not _conflicts(span, taken):
            taken.add(span)
    return sorted(taken, key=lambda span: span[:2])


@settings(max_examples=300, deadline=None)
@given(text=TEXT, raw=RAW_EDITS)
def test_chosen_spans_apply_where_the_fixer_maps_them(text, raw):
    spans = _choose(text, raw)
    round_ = _Round(text)
    for offset in range(len(text) + 1):  # offsets and (line, column) convert both ways
        assert round_.offset(*_position(round_, offset)) == offset
    new = apply_edits(text, [Edit(*_position(round_, s), *_position(round_, e), c) for s, e, c in spans])
    moved = _new_spans(spans)
    for span in spans:
        new_start, new_end = moved[span]
        assert new[new_start:new_end] == span[2]
    covered = {offset for start, end, _ in spans for offset in range(start, end)}
    for offset, char in enumerate(text):
        if offset not in covered:
            assert new[_map_offset(spans, offset, "start")] == char
    assert len(new) == len(text) + sum(len(c) - (e - s) for s, e, c in spans)

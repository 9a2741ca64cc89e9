"""One file's text -> its fixed text, or the reason it is left alone.

Each round checks the text, picks the fixes that apply (safe ones; unsafe ones when asked),
leaves out those inside fallback or version-check branches, takes them in source order while
their edits do not overlap an already chosen fix (the others wait for the next round), applies
them together, and re-checks. Rounds repeat until no fix is left: a fixed point, so a second run
changes nothing. The result must parse with libcst and no fixed finding may still (or newly) be
reported at the site its fix edited; if anything fails, the whole file is left as it was.
"""

from __future__ import annotations

import bisect
import dataclasses
import re

import libcst as cst

from dtype_lint.config import Settings
from dtype_lint.edits import _line_offsets, _offset, apply_edits  # the one position -> offset rule
from dtype_lint.facts.names import ImportTable
from dtype_lint.findings import Edit, Finding, Safety
from dtype_lint.fixer.guards import guarded_ranges

MAX_ROUNDS = 10
INTERNAL_ERROR = re.compile(r"internal error in (DTL\d+)")

Span = tuple[int, int, str]  # start offset, end offset (exclusive), new content


@dataclasses.dataclass(frozen=True)
class SkippedFix:
    finding: Finding
    reason: str


@dataclasses.dataclass
class FixOutcome:
    original: str
    text: str  # the fixed text; ``original`` when nothing applied or the fix failed
    fixed: list[Finding]  # findings whose fix was applied (positions as found, round by round)
    remaining: list[Finding]  # findings in ``text``
    skipped: list[SkippedFix]
    failure: str | None = None
    internal_errors: list[str] = dataclasses.field(default_factory=list)
    rounds: int = 0

    @property
    def changed(self) -> bool:
        return self.text != self.original


@dataclasses.dataclass
class _Chosen:
    finding: Finding
    spans: list[Span]


def _same_newlines(content: str, newline: str) -> str:
    """A CRLF file gets CRLF in inserted text too, whatever the rule wrote."""
    return re.sub(r"(?<!\r)\n", "\r\n", content) if newline == "\r\n" else content


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Do two offset ranges share text? An empty range (an insertion point, a zero-width
    finding) overlaps a range that starts at it or holds it."""
    (s1, e1), (s2, e2) = a, b
    if s1 == e1:
        return s1 == s2 or s2 <= s1 < e2
    if s2 == e2:
        return s1 < s2 < e1
    return s1 < e2 and s2 < e1


def _conflicts(span: Span, taken: set[Span]) -> bool:
    """Does ``span`` overlap an edit of an already chosen fix? Touching is fine: an insertion
    right before or after a replaced range applies in a well-defined order."""
    start, end, _ = span
    for other in taken:
        if other == span:
            continue  # the very same edit (an import two fixes need) is applied once
        o_start, o_end, _ = other
        if start == end and o_start == o_end:
            if start == o_start:
                return True  # two different insertions at one point: their order would be arbitrary
        elif start == end:
            if o_start < start < o_end:
                return True
        elif o_start == o_end:
            if start < o_start < end:
                return True
        elif start < o_end and o_start < end:
            return True
    return False


class _Round:
    """The positions of one round's text, to turn lines and columns into offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offsets = _line_offsets(text)
        self.newline = "\r\n" if "\r\n" in text else "\n"

    def offset(self, line: int, column: int) -> int:
        return _offset(self.offsets, self.text, line, column)

    def finding_span(self, finding: Finding) -> tuple[int, int]:
        return (self.offset(finding.line, finding.column), self.offset(finding.end_line, finding.end_column))

    def span(self, edit: Edit) -> Span:
        start, end = self.offset(edit.line, edit.column), self.offset(edit.end_line, edit.end_column)
        content = _same_newlines(edit.content, self.newline)
        if start == end == len(self.text) and self.text and not self.text.endswith("\n") and edit.column == 1:
            # A line inserted after the last line of a file without a final newline: it goes on
            # a line of its own, and the file still ends without one.
            content = self.newline + content[: -len(self.newline)] if content.endswith(self.newline) else self.newline + content
        return start, end, content

    def spans(self, edits: tuple[Edit, ...]) -> list[Span] | None:
        """The fix's edits as offsets, or None when they contradict each other."""
        # Stable sort: insertions at one point keep the order the rule gave them.
        spans = sorted((self.span(edit) for edit in edits), key=lambda span: span[:2])
        for index, (start, end, _) in enumerate(spans):
            if end < start or (index and start < spans[index - 1][1]):
                return None
        return spans


def _guard_reason(round_: _Round, finding: Finding, spans: list[Span], guards) -> str | None:
    finding_start = round_.finding_span(finding)[0]
    for guard in guards:
        g_start, g_end = round_.offset(*guard.start), round_.offset(*guard.end)
        if g_start <= finding_start < g_end:
            return guard.reason
        for start, end, _ in spans:
            inside = g_start < start < g_end if start == end else start < g_end and end > g_start
            if inside:
                return guard.reason
    return None


def _choose(round_: _Round, module: cst.Module, findings: list[Finding], unsafe: bool):
    candidates = [f for f in findings if f.fix is not None and (unsafe or f.fix.safety is Safety.SAFE)]
    if not candidates:
        return [], []
    guards = guarded_ranges(module, ImportTable.from_module(module))
    prepared = []
    skipped: list[SkippedFix] = []
    for finding in candidates:
        spans = round_.spans(finding.fix.edits)
        if spans is None or not spans:
            skipped.append(SkippedFix(finding, "the fix's edits contradict each other"))
            continue
        reason = _guard_reason(round_, finding, spans, guards)
        if reason is not None:
            skipped.append(SkippedFix(finding, reason))
            continue
        prepared.append(_Chosen(finding, spans))
    prepared.sort(key=lambda c: (c.spans[0][0], c.finding.sort_key()))
    chosen: list[_Chosen] = []
    taken: set[Span] = set()
    for candidate in prepared:
        if any(_conflicts(span, taken) for span in candidate.spans):
            continue  # overlaps an earlier fix: it waits for the next round
        chosen.append(candidate)
        taken.update(candidate.spans)
    return chosen, skipped


def _map_offset(spans: list[Span], position: int, side: str) -> int:
    """Where an old offset lands in the new text; inside a replaced range it snaps to the
    replacement's start (``side="start"``) or end (``side="end"``)."""
    delta = 0
    for start, end, content in spans:
        grow = len(content) - (end - start)
        if side == "start":
            if end <= position:
                delta += grow
            elif start < position:
                return start + delta
            else:
                break
        else:
            if end < position:
                delta += grow
            elif start < position:
                return start + delta + len(content)
            else:
                break
    return position + delta


def _new_spans(spans: list[Span]) -> dict[Span, tuple[int, int]]:
    result = {}
    delta = 0
    for start, end, content in spans:
        result[(start, end, content)] = (start + delta, start + delta + len(content))
        delta += len(content) - (end - start)
    return result


def _site_problem(old: _Round, old_findings, chosen: list[_Chosen], spans: list[Span], new: _Round, new_findings):
    """A fixed finding still (or newly) reported where its fix edited, or None.

    Findings of the same code at the site that were not fixed this round (one nested in
    another waits for its turn) may stay; any beyond those is the fix failing."""
    fixed = {id(c.finding) for c in chosen}
    moved = _new_spans(spans)
    for candidate in chosen:
        finding = candidate.finding
        f_start, f_end = old.finding_span(finding)
        old_regions = [(f_start, f_end)] + [(s, e) for s, e, _ in candidate.spans]
        new_regions = [(_map_offset(spans, f_start, "start"), _map_offset(spans, f_end, "end"))]
        new_regions += [moved[span] for span in candidate.spans]
        waiting = [
            f for f in old_findings
            if f.code == finding.code and id(f) not in fixed
            and any(_overlaps(old.finding_span(f), region) for region in old_regions)
        ]
        after = [
            f for f in new_findings
            if f.code == finding.code and any(_overlaps(new.finding_span(f), region) for region in new_regions)
        ]
        if len(after) > len(waiting):
            return f"the {finding.code} fix at line {finding.line} did not remove the finding (still reported after the fix)"
    return None


def _parse(text: str) -> tuple[cst.Module | None, str | None]:
    try:
        return cst.parse_module(text), None
    except cst.ParserSyntaxError as error:
        return None, f"line {error.raw_line}: {error.message}"
    except Exception as error:  # noqa: BLE001 - native parser errors of any kind
        return None, f"{type(error).__name__}: {error}"


def _failed_rules(errors: list[str]) -> set[str]:
    return {match.group(1) for error in errors for match in [INTERNAL_ERROR.search(error)] if match}


def _describe(chosen: list[_Chosen]) -> str:
    return ", ".join(f"{c.finding.code} (line {c.finding.line})" for c in chosen)


def fix_text(
    text: str, path: str, settings: Settings, *, unsafe: bool = False, max_rounds: int = MAX_ROUNDS
) -> FixOutcome:
    """Apply the fixes the findings in ``text`` carry; see the module docstring."""
    from dtype_lint.engine import check_text

    first = check_text(text, path, settings)

    def fail(reason: str) -> FixOutcome:
        return FixOutcome(text, text, [], first.findings, [], reason, first.internal_errors)

    current, report = text, first
    module: cst.Module | None = None
    fixed: list[Finding] = []
    for round_number in range(max_rounds + 1):
        round_ = _Round(current)
        candidates_exist = any(f.fix is not None for f in report.findings)
        if candidates_exist and module is None:
            module, problem = _parse(current)
            if module is None:  # the file itself does not parse: nothing to fix
                return FixOutcome(text, text, [], first.findings, [], None, first.internal_errors)
        chosen, skipped = _choose(round_, module, report.findings, unsafe) if candidates_exist else ([], [])
        if not chosen:
            if current != text:
                current, report = _without_orphaned_imports(text, current, report, path, settings)
            return FixOutcome(text, current, fixed, report.findings, skipped, None, report.internal_errors, round_number)
        if round_number == max_rounds:
            return fail(f"fixes did not reach a fixed point in {max_rounds} rounds")
        unique = dict.fromkeys(span for candidate in chosen for span in candidate.spans)  # shared edits once
        spans = sorted(unique, key=lambda span: span[:2])
        new_text = apply_edits(current, [Edit(*_position(round_, s), *_position(round_, e), c) for s, e, c in spans])
        module, problem = _parse(new_text)
        if module is None:
            return fail(f"fixes for {_describe(chosen)} give code that does not parse ({problem})")
        new_report = check_text(new_text, path, settings)
        broken = _failed_rules(new_report.internal_errors) - _failed_rules(report.internal_errors)
        if broken:
            return fail(f"rule {', '.join(sorted(broken))} fails on the fixed code of {_describe(chosen)}")
        problem = _site_problem(round_, report.findings, chosen, spans, _Round(new_text), new_report.findings)
        if problem:
            return fail(problem)
        fixed.extend(candidate.finding for candidate in chosen)
        current, report = new_text, new_report
    raise AssertionError("unreachable")


def _without_orphaned_imports(original: str, current: str, report, path: str, settings: Settings):
    """The fixed text without the imports the fixes left unused, and its report; unchanged if
    dropping them would change what is reported."""
    from dtype_lint.engine import check_text
    from dtype_lint.fixer.orphans import drop_orphaned_imports

    cleaned = drop_orphaned_imports(original, current)
    if cleaned == current or _parse(cleaned)[0] is None:
        return current, report
    cleaned_report = check_text(cleaned, path, settings)
    if [f.code for f in cleaned_report.findings] != [f.code for f in report.findings]:
        return current, report
    return cleaned, cleaned_report


def _position(round_: _Round, offset: int) -> tuple[int, int]:
    """1-based (line, column) of an offset in the round's text (inverse of ``offset``)."""
    index = bisect.bisect_right(round_.offsets, offset) - 1
    return index + 1, offset - round_.offsets[index] + 1

"""``check --add-noqa``: suppress today's findings in place, to adopt the linter on old code.

Each finding gets ``# noqa: CODE`` where the suppression logic looks (suppress.py): the reported
line, else the first line of its statement, else the last line of the reported line's token run
(a backslash continuation or a multi-line string ends there; flake8 reads a noqa there too). A
comment can only end a line that ends a token: a finding with no line to hold the comment
(the file does not tokenize) is reported, never written into a string, and the run exits 1. A line that already has
``# noqa: CODES`` keeps them and gains the new codes, so a second run changes nothing. In a
notebook the directives go into the cells' sources, the rest of the JSON kept byte for byte.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import os
import tokenize
from typing import TextIO

from dtype_lint.findings import Finding
from dtype_lint.notebook import NotebookError, load_program
from dtype_lint.suppress import NOQA, _codes, token_runs

PARSE_ERROR = "DTL001"


def commentable_lines(text: str) -> set[int]:
    """Lines whose end is outside any token (a comment appended there is a comment)."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT):
            lines.add(token.start[0])
    return lines


def statement_starts(tree: ast.Module) -> list[tuple[int, int]]:
    """(first line, last line) of every statement."""
    return [
        (node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree) if isinstance(node, ast.stmt)
    ]


def _statement_line(spans: list[tuple[int, int]], line: int) -> int:
    """The first line of the innermost statement holding ``line``."""
    holding = [start for start, end in spans if start <= line <= end]
    return max(holding) if holding else line


def _with_codes(line: str, codes: list[str]) -> str:
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    match = NOQA.search(body)
    existing = _codes(match.group("codes")) if match else None
    if match and existing is not None:
        # Keep the codes in the order written; the match may end in separators, leave those.
        written = [code for code in match.group("codes").replace(",", " ").split() if code]
        merged = written + [code for code in codes if code not in {c.upper() for c in written}]
        end = match.start() + len(match.group(0).rstrip(", \t"))
        return body[: match.start()] + "# noqa: " + ", ".join(merged) + body[end:] + ending
    return body.rstrip() + "  # noqa: " + ", ".join(codes) + ending


def with_noqa(text: str, findings: list[Finding]) -> tuple[str, int, list[Finding]]:
    """The text with the directives added, how many codes were added, and the findings that
    have no line a comment can go on."""
    commentable = commentable_lines(text)
    spans = statement_starts(ast.parse(text))
    runs = token_runs(text)
    wanted: dict[int, list[str]] = {}
    unplaced: list[Finding] = []
    for finding in findings:
        run_end = runs.get(finding.line, (finding.line, finding.line))[1]
        candidates = (finding.line, _statement_line(spans, finding.line), run_end)
        target = next((line for line in candidates if line in commentable), None)
        if target is None:
            unplaced.append(finding)
            continue
        codes = wanted.setdefault(target, [])
        if finding.code not in codes:
            codes.append(finding.code)
    lines = text.splitlines(keepends=True)
    for number, codes in wanted.items():
        lines[number - 1] = _with_codes(lines[number - 1], sorted(codes))
    return "".join(lines), sum(len(codes) for codes in wanted.values()), unplaced


def _notebook_with_noqa(data: bytes, findings: list[Finding]) -> tuple[bytes, int, list[Finding]]:
    """The same for a notebook: on the cells' program, written back into the cells' sources."""
    raw = data.decode("utf-8-sig")
    program = load_program(raw)
    program_line = {origin: number for number, origin in enumerate(program.origins, start=1) if origin}
    by_program_finding: dict[int, Finding] = {}
    in_program: list[Finding] = []
    for finding in findings:
        line = program_line.get((finding.cell, finding.line))
        if line is not None:
            moved = dataclasses.replace(finding, line=line, end_line=line, cell=None)
            by_program_finding[id(moved)] = finding
            in_program.append(moved)
    text, count, unplaced = with_noqa(program.text, in_program)
    new_raw = program.rebuild(text) if count else raw
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    return bom + new_raw.encode("utf-8"), count, [by_program_finding[id(f)] for f in unplaced]


@dataclasses.dataclass
class AddNoqaOutcome:
    added: int = 0  # codes written
    unplaced: int = 0  # findings left without a directive (the next check reports them)
    failed: int = 0  # files that could not be read or written


def add_noqa(reports, fs_paths: dict[str, str], err: TextIO) -> AddNoqaOutcome:
    """Write the directives into each reported file."""
    from dtype_lint.fixer.files import _signature, atomic_write
    from dtype_lint.printable import printable
    from dtype_lint.report.text_format import location
    from dtype_lint.source import UndecodableSource, decode

    outcome = AddNoqaOutcome()
    for report in reports:
        findings = [finding for finding in report.findings if finding.code != PARSE_ERROR]
        if not findings:
            continue
        fs_path = fs_paths.get(report.path, report.path)
        try:
            with open(fs_path, "rb") as stream:
                read_as = _signature(os.fstat(stream.fileno()))
                data = stream.read()
            if report.path.endswith(".ipynb"):
                output, count, unplaced = _notebook_with_noqa(data, findings)
            else:
                source = decode(data)
                text, count, unplaced = with_noqa(source.text, findings)
                output = source.encode(text)
            if count:
                atomic_write(fs_path, output, read_as)
        except (OSError, UndecodableSource, SyntaxError, tokenize.TokenError, UnicodeError, NotebookError) as error:
            reason = printable(str(getattr(error, "reason", error)))
            err.write(f"dtype-lint: error: {printable(report.path)}: no noqa added: {reason}\n")
            outcome.failed += 1
            continue
        outcome.added += count
        outcome.unplaced += len(unplaced)
        for finding in unplaced:
            err.write(f"{location(finding)}: {finding.code} no line can hold `# noqa`: suppress it by hand\n")
    return outcome

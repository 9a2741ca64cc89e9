"""Line-independent identities of findings, shared by the baseline and SARIF's partialFingerprints.

A finding's fingerprint hashes its code, the normalised text of the statement that holds it
(tokens joined by one space, comments dropped; for a compound statement only its header, so
edits inside a ``with`` body do not touch a finding on the ``with`` line), the qualified name of
the enclosing functions and classes (``Trainer.step``), and its occurrence index among findings
sharing those three. Lines inserted above, reformatting, and edits to other statements leave it
alone; the same statement moved to another function is a new finding.

Computed after the fact from the report's lines (Python's ``ast``, only for files with findings),
so findings, the cache and every rule stay as they are.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import io
import tokenize
import warnings

from dtype_lint.findings import Finding

_SKIPPED_TOKENS = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclasses.dataclass(frozen=True)
class Fingerprint:
    code: str
    scope: str  # "Trainer.step"; "" at module level
    statement: str  # normalised statement (header) text
    occurrence: int

    @property
    def digest(self) -> str:
        material = "\0".join((self.code, self.scope, self.statement, str(self.occurrence)))
        return hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]


@dataclasses.dataclass(frozen=True)
class _Statement:
    first: int  # first line (decorators included)
    last: int  # last line of the header (the whole statement for a simple one)
    scope: str


def normalise(text: str) -> str:
    """Tokens joined by single spaces, comments dropped; plain whitespace collapsing when the
    text does not tokenize (a fragment of a bracketed expression)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tokens = [
                token.string
                for token in tokenize.generate_tokens(io.StringIO(text).readline)
                if token.type not in _SKIPPED_TOKENS
            ]
        return " ".join(tokens)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return " ".join(text.split())


def _child_bodies(node: ast.stmt) -> list[list[ast.stmt]]:
    bodies = [getattr(node, field, None) for field in ("body", "orelse", "finalbody")]
    bodies += [handler.body for handler in getattr(node, "handlers", ())]
    bodies += [case.body for case in getattr(node, "cases", ())]
    return [body for body in bodies if isinstance(body, list) and body and isinstance(body[0], ast.stmt)]


def _innermost(statements: list[ast.stmt], line: int, scope: str) -> _Statement | None:
    for node in statements:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
        last = node.end_lineno or node.lineno
        if not first <= line <= last:
            continue
        bodies = _child_bodies(node)
        if not bodies:
            return _Statement(first, last, scope)
        header_last = max(node.lineno, min(body[0].lineno for body in bodies) - 1)
        if line <= header_last:
            return _Statement(first, header_last, scope)
        inner_scope = f"{scope}.{node.name}".lstrip(".") if isinstance(node, _SCOPES) else scope
        found = _innermost([s for body in bodies for s in body], line, inner_scope)
        return found or _Statement(first, header_last, scope)
    return None


def _program_line(lines: list[str], finding: Finding) -> int:
    """The finding's line in ``lines``: a notebook report's lines are its program (cell markers
    and all), in which a cell-relative line is counted from its cell's marker."""
    if finding.cell is None:
        return finding.line
    from dtype_lint.notebook import CELL_MARKER

    try:
        return lines.index(CELL_MARKER.format(finding.cell)) + 1 + finding.line
    except ValueError:
        return finding.line


def fingerprints(findings: list[Finding], lines: list[str] | None) -> list[Fingerprint]:
    """Fingerprints of one file's findings (in the order given), from the file's lines."""
    lines = lines or []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree: ast.Module | None = ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None  # DTL001 and friends: the line alone
    ordered = sorted(range(len(findings)), key=lambda index: findings[index].sort_key())
    seen: dict[tuple[str, str, str], int] = {}
    result: list[Fingerprint | None] = [None] * len(findings)
    for index in ordered:
        finding = findings[index]
        line = _program_line(lines, finding)
        statement = _innermost(tree.body, line, "") if tree is not None else None
        if statement is None:
            statement = _Statement(line, line, "")
        text = normalise("\n".join(lines[statement.first - 1: statement.last]))
        key = (finding.code, statement.scope, text)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        result[index] = Fingerprint(finding.code, statement.scope, text, occurrence)
    return result  # type: ignore[return-value]


def report_fingerprints(report) -> list[Fingerprint]:
    return fingerprints(report.findings, report.lines)

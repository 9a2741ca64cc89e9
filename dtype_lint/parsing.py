"""libcst's parse, without re-validating every node the parser has just built, and a big file a
slice of top-level statements at a time.

Each libcst node runs ``_validate()`` from its constructor (``CSTNode.__post_init__``): about 30 %
of ``libcst.parse_module``'s time on real files (benchmarks/RESULTS.md). Validation protects trees
built by hand; a tree the parser built from source that parsed is valid by construction (libcst's
own source says as much: "avoid validating the tree when parsing a file"). So the engine parses
with validation switched off for the duration of the call; nodes that rules or fixes build later
are validated as usual.

libcst's native parser holds, while it runs, 250 to 700 bytes of memory per byte of source (its
tokens and packrat caches), five to twenty times the tree it returns: a 1 MB file peaked at
300-770 MB. A big file is therefore parsed in slices of whole top-level statements, cut where
CPython's tree says statements start, and the slices' modules are joined into the one module a
single parse gives (the blank lines and comments at the end of a slice are the first statement's
``leading_lines`` of the next, as libcst attaches them). tests/test_robustness.py checks that the
joined tree equals the single parse's on real files.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import re

import libcst as cst

# A file over this many characters is parsed in slices of about this size.
SLICE = 64_000
# A simple top-level statement (not a block) over this many characters, a data table as a rule,
# is not given to libcst (its parser would peak near 200 MB on it): it is read as comment lines of
# the same lengths, so every other node keeps its position, and reported (see engine.py).
GIANT_STATEMENT = 256_000
_LINE_END = re.compile(r"\r\n|\n")


def _skip_validation(self) -> None:
    pass


_SIMPLE = (
    ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Delete, ast.Pass, ast.Break,
    ast.Continue, ast.Raise, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom, ast.Assert,
)


@dataclasses.dataclass(frozen=True)
class Statement:
    """A top-level statement of CPython's tree, where libcst may cut the file."""

    line: int  # 1-based, its decorators included
    block: bool  # a compound statement (a block cannot be cut or left out)


def statement_starts(tree) -> list[Statement]:
    """The top-level statements of an ``ast.Module`` that start a line of their own (``a = 1;
    b = 2`` is one libcst statement, so ``b`` starts none)."""
    starts: list[Statement] = []
    previous_end = 0
    for statement in tree.body:
        first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])
        if first > previous_end:
            starts.append(Statement(first, not isinstance(statement, _SIMPLE)))
        previous_end = max(previous_end, statement.end_lineno or statement.lineno)
    return starts


def parse_module(text: str) -> cst.Module:
    """``libcst.parse_module(text)``, minus the per-node validation (same tree, same errors)."""
    with _unvalidated():
        return cst.parse_module(text)


def parse_in_slices(
    text: str, statements: list[Statement] | None, slice_size: int = SLICE
) -> tuple[cst.Module, list[tuple[int, int]]]:
    """``parse_module(text)``, a slice at a time when ``text`` is longer than ``slice_size``
    (``statements``: from ``statement_starts``), and the ``(line, length)`` of each giant
    statement read as comments (see GIANT_STATEMENT)."""
    with _unvalidated():
        if statements is None or len(text) <= slice_size or "\r" in text.replace("\r\n", ""):
            return cst.parse_module(text), []  # (a lone CR ends a line for CPython, not for the cut below)
        pieces, skipped = _slices(text, statements, slice_size)
        if len(pieces) < 2:
            return cst.parse_module(pieces[0] if pieces else text), skipped
        try:
            return _parse_pieces(pieces), skipped
        except cst.ParserSyntaxError:  # CPython's grammar took it, libcst's did not: where, says the whole
            return cst.parse_module(text), []


def _parse_pieces(pieces: list[str]) -> cst.Module:
    modules = [cst.parse_module(pieces[0])]
    newline = modules[0].default_newline  # libcst takes a file's newline from its first line break
    indent = modules[0].default_indent if _indents(modules[0]) else None  # and its indent from the first block
    for piece in pieces[1:]:
        # A line break or block libcst gives no text of its own is written with the module's
        # default: a slice must take the file's defaults, not its own, so a statement that sets
        # them goes first (and is dropped).
        prefix = f"if 1:{newline}{indent}pass{newline}" if indent is not None else f"pass{newline}"
        module = cst.parse_module(prefix + piece)
        if indent is None and _indents(module):
            indent = module.default_indent
        modules.append(module.with_changes(body=module.body[1:]))
    return _join(modules)


@contextlib.contextmanager
def _unvalidated():
    original = cst.CSTNode.__dict__.get("__post_init__")
    if original is None:  # a libcst that validates elsewhere: nothing to switch off
        yield
        return
    cst.CSTNode.__post_init__ = _skip_validation
    try:
        yield
    finally:
        cst.CSTNode.__post_init__ = original


def _slices(text: str, statements: list[Statement], slice_size: int) -> tuple[list[str], list[tuple[int, int]]]:
    line_starts = [0] + [match.end() for match in _LINE_END.finditer(text)]
    # each statement's text runs to the next one's first line (its trailing comments included)
    bounds = [(line_starts[s.line - 1], s) for s in statements if 1 <= s.line <= len(line_starts)]
    pieces: list[str] = []
    skipped: list[tuple[int, int]] = []
    cut = 0
    for index, (start, statement) in enumerate(bounds):
        end = bounds[index + 1][0] if index + 1 < len(bounds) else len(text)
        if not statement.block and end - start > GIANT_STATEMENT:
            if start > cut:
                pieces.append(text[cut:start])
            pieces.append(_as_comments(text[start:end]))
            skipped.append((statement.line, end - start))
            cut = end
        elif start - cut >= slice_size:
            pieces.append(text[cut:start])
            cut = start
    if cut < len(text):
        pieces.append(text[cut:])
    return _merge_small(pieces, slice_size), skipped


def _merge_small(pieces: list[str], slice_size: int) -> list[str]:
    """A slice shorter than ``slice_size`` is joined to the one before it (comment blocks too)."""
    merged: list[str] = []
    for piece in pieces:
        if merged and len(merged[-1]) < slice_size:
            merged[-1] += piece
        else:
            merged.append(piece)
    return merged


def _as_comments(code: str) -> str:
    """Each line of ``code`` as a comment line of the same length (line breaks kept)."""
    return re.sub(r"[^\r\n]+", lambda line: "#" + " " * (len(line.group(0)) - 1), code)


def _join(modules: list[cst.Module]) -> cst.Module:
    body: list[cst.CSTNode] = []
    carried: list[cst.EmptyLine] = []  # the previous slice's trailing blank lines and comments
    for index, module in enumerate(modules):
        statements = list(module.body)
        lines = [*carried, *(module.header if index else ())]
        if statements and lines:
            statements[0] = statements[0].with_changes(leading_lines=[*lines, *statements[0].leading_lines])
            lines = []
        body.extend(statements)
        carried = [*lines, *module.footer]
    first, last = modules[0], modules[-1]
    return first.with_changes(
        body=body,
        header=first.header if body else [],
        footer=carried,
        default_indent=next((m.default_indent for m in modules if _indents(m)), first.default_indent),
        has_trailing_newline=last.has_trailing_newline,
    )


def _indents(module: cst.Module) -> bool:
    """Whether the slice holds an indented block (libcst took its ``default_indent`` from the first)."""
    return any(isinstance(getattr(statement, "body", None), cst.IndentedBlock) for statement in module.body)

"""Jupyter notebooks: the code cells checked as one program, findings mapped back to cells.

A notebook runs its code cells top to bottom in one namespace, so they are analysed as one
program: the cells concatenated in order, each preceded by a marker comment line, with IPython
syntax (``%magic``, ``%%cell magic``, ``!shell``, ``obj?``) replaced by a placeholder ``pass`` at
the same indentation. Every program line maps back to ``(cell, line)``; cells are numbered
1-based by their position among *all* cells of the notebook, as a user scrolling it counts them.

``fix`` works on the same program text (``load_program``) and hands the fixed program to
``NotebookProgram.rebuild``, which puts the cells back into the notebook JSON, changing only the
``source`` values of the cells that changed, byte for byte everything else.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from json.decoder import scanstring
from typing import Any

from dtype_lint.findings import Edit, Finding, Fix, sort_findings

CELL_MARKER = "# dtype-lint-notebook-cell:{}"
MAGIC_PLACEHOLDER = "pass  # dtype-lint-notebook-magic:{}"
_CELL_MARKER_LINE = re.compile(r"^# dtype-lint-notebook-cell:(\d+)$")
_MAGIC_LINE = re.compile(r"^[ \t]*pass  # dtype-lint-notebook-magic:(\d+)$")
# ``%%time`` and friends run their body as Python; any other cell magic (%%bash, %%writefile,
# %%html, %%sql, ...) makes the whole cell something else.
PYTHON_BODY_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit", "profile"})
# ``files = !ls`` and ``t = %timeit -o f()``: an assignment whose value is IPython syntax.
_ASSIGNED_MAGIC = re.compile(r"^[ \t]*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]")


class NotebookError(Exception):
    """The file is not a notebook we can read. ``line``/``column`` are 1-based, in the JSON."""

    def __init__(self, reason: str, line: int = 1, column: int = 1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.column = column


@dataclasses.dataclass(frozen=True)
class _CodeCell:
    number: int  # 1-based among all cells
    source: str
    source_span: tuple[int, int]  # offsets of the JSON value of "source" in the raw text
    source_is_list: bool
    # For each line of the cell, the line of the notebook's JSON text that holds it (SARIF
    # locations point there: a viewer opens the .ipynb file at the cell's code).
    json_lines: tuple[int, ...] = ()


def _json_int(text: str) -> int | float:
    """A JSON integer; one longer than ``int()`` takes (CPython refuses more than 4,300 digits) is
    kept as a float: no number of a notebook is read but its format version."""
    try:
        return int(text)
    except ValueError:
        return float(text)


# -- a JSON reader that remembers where values are ----------------------------------------------
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


@dataclasses.dataclass
class _Value:
    value: Any  # the Python value, children as _Value
    start: int
    end: int


def _parse_value(text: str, index: int) -> _Value:
    """Recursive descent over text already known to be valid JSON (json.loads checked it)."""
    index = _WHITESPACE.match(text, index).end()
    char = text[index]
    if char == "{":
        members: dict[str, _Value] = {}
        cursor = _WHITESPACE.match(text, index + 1).end()
        if text[cursor] == "}":
            return _Value(members, index, cursor + 1)
        while True:
            key, cursor = scanstring(text, _WHITESPACE.match(text, cursor).end() + 1)
            cursor = _WHITESPACE.match(text, cursor).end() + 1  # past ':'
            members[key] = _parse_value(text, cursor)
            cursor = _WHITESPACE.match(text, members[key].end).end()
            if text[cursor] == "}":
                return _Value(members, index, cursor + 1)
            cursor += 1  # past ','
    if char == "[":
        items: list[_Value] = []
        cursor = _WHITESPACE.match(text, index + 1).end()
        if text[cursor] == "]":
            return _Value(items, index, cursor + 1)
        while True:
            items.append(_parse_value(text, cursor))
            cursor = _WHITESPACE.match(text, items[-1].end).end()
            if text[cursor] == "]":
                return _Value(items, index, cursor + 1)
            cursor += 1
    if char == '"':
        string, end = scanstring(text, index + 1)
        return _Value(string, index, end)
    for literal, value in (("true", True), ("false", False), ("null", None)):
        if text.startswith(literal, index):
            return _Value(value, index, index + len(literal))
    match = _NUMBER.match(text, index)
    return _Value(json.loads(match.group(0), parse_int=_json_int), index, match.end())


def _read_cells(text: str) -> list[_CodeCell]:
    """The notebook's code cells (none for a notebook in another language)."""
    try:
        data = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not valid notebook JSON: {error.msg}", error.lineno, error.colno) from None
    except RecursionError:
        raise NotebookError("not valid notebook JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise NotebookError("not a notebook: the JSON is not an object")
    if "cells" not in data and "worksheets" in data:
        raise NotebookError("nbformat 3 notebooks are not supported; upgrade with `jupyter nbconvert --to notebook`")
    if not isinstance(data.get("cells"), list):
        raise NotebookError("not a notebook: no 'cells' list")
    if not _is_python(data.get("metadata")):
        return []
    try:
        root = _parse_value(text, 0).value
    except RecursionError:
        raise NotebookError("notebook JSON nested too deeply") from None
    cells: list[_CodeCell] = []
    for number, cell in enumerate(root["cells"].value, start=1):
        fields = cell.value if isinstance(cell.value, dict) else {}
        kind = fields.get("cell_type")
        if kind is None or kind.value != "code" or "source" not in fields:
            continue
        source = fields["source"]
        if isinstance(source.value, str):
            text_value, is_list = source.value, False
        elif isinstance(source.value, list) and all(isinstance(part.value, str) for part in source.value):
            text_value, is_list = "".join(part.value for part in source.value), True
        else:
            line = text.count("\n", 0, source.start) + 1
            raise NotebookError(f"cell {number}: 'source' must be a string or a list of strings", line)
        cells.append(_CodeCell(number, text_value, (source.start, source.end), is_list, _json_lines(text, source, is_list)))
    return cells


def _json_lines(text: str, source: _Value, is_list: bool) -> tuple[int, ...]:
    """The JSON line each line of a cell's source starts on: a string's own line for a list of
    strings (nbformat's usual one string per line); the one line of a single string otherwise."""
    parts = source.value if is_list else [source]
    lines: list[int] = []
    counted, newlines = 0, 0
    at_line_start = True
    for part in parts:
        newlines += text.count("\n", counted, part.start)
        counted = part.start
        json_line = newlines + 1
        value = part.value
        if at_line_start and value:
            lines.append(json_line)
        # A line break inside the string (not at its end) starts a line on the same JSON line.
        lines.extend(json_line for _ in range(value.count("\n", 0, max(0, len(value) - 1))))
        if value:
            at_line_start = value.endswith("\n")
    return tuple(lines)


def _is_python(metadata: Any) -> bool:
    if not isinstance(metadata, dict):
        return True
    for section, key in (("kernelspec", "language"), ("language_info", "name")):
        info = metadata.get(section)
        if isinstance(info, dict) and isinstance(info.get(key), str):
            return info[key].lower().startswith("python")  # "python", "Python", "python3"
    return True


# -- IPython syntax -----------------------------------------------------------------------------
def _statement_starts(lines: list[str]) -> list[bool]:
    """For each line, whether it begins a new statement (not inside brackets, strings, or a
    backslash continuation). Only such lines can be IPython syntax."""
    starts: list[bool] = []
    depth = 0
    quote: str | None = None
    continued = False
    for line in lines:
        starts.append(depth == 0 and quote is None and not continued)
        index = 0
        while index < len(line):
            char = line[index]
            if quote is not None:
                if char == "\\":
                    index += 2
                    continue
                if line.startswith(quote, index):
                    index += len(quote)
                    quote = None
                    continue
            elif char == "#":
                break
            elif char in "\"'":
                quote = line[index : index + 3] if line[index : index + 3] in ('"""', "'''") else char
                index += len(quote)
                continue
            elif char in "([{":
                depth += 1
            elif char in ")]}":
                depth = max(0, depth - 1)
            index += 1
        if quote is not None and len(quote) == 1:
            quote = None  # an unterminated one-line string: a syntax error, not our business
        continued = line.rstrip().endswith("\\") and quote is None
    return starts


def _code_part(line: str) -> str:
    """The line without string contents and comment, enough to spot a stray ``?``."""
    out: list[str] = []
    quote: str | None = None
    for char in line:
        if quote is None:
            if char == "#":
                break
            if char in "\"'":
                quote = char
            else:
                out.append(char)
        elif char == quote:
            quote = None
    return "".join(out)


def is_ipython_line(line: str) -> bool:
    stripped = line.lstrip()
    if stripped.startswith(("%", "!", "?")):
        return True
    if _ASSIGNED_MAGIC.match(line):
        return True
    return "?" in _code_part(stripped)  # ``obj?``, ``obj??``: Python has no other use for '?'


# -- the program --------------------------------------------------------------------------------
def _split_lines(source: str) -> list[str]:
    """Cell source -> lines, without a phantom empty last line for a trailing newline."""
    if not source:
        return []
    lines = source.split("\n")
    if source.endswith("\n"):
        lines.pop()
    return lines


# How rule messages cite another line of the file ("GradScaler line 23", "since line 25").
_PROGRAM_LINE = re.compile(r"\bline (\d+)\b")


@dataclasses.dataclass
class NotebookProgram:
    """The code cells of one notebook as one Python program, and the way back."""

    raw: str
    cells: list[_CodeCell]
    text: str
    # origins[i] is the (cell, line) of program line i + 1; None for marker lines.
    origins: list[tuple[int, int] | None]
    magics: dict[int, str]  # placeholder id -> the original line

    @functools.cached_property
    def cell_lines(self) -> dict[int, list[str]]:
        return {cell.number: _split_lines(cell.source) for cell in self.cells}

    def locate(self, line: int, column: int = 1) -> tuple[int, int, int] | None:
        """Program position -> (cell, line, column), 1-based. A position at the very start of a
        marker line (where an insertion after a cell's last statement lands) belongs to the end
        of the cell before it."""
        if 1 <= line <= len(self.origins) and self.origins[line - 1] is not None:
            cell, cell_line = self.origins[line - 1]
            return cell, cell_line, column
        if column != 1 and line <= len(self.origins):
            return None
        previous = line - 1
        while previous >= 1 and previous <= len(self.origins) and self.origins[previous - 1] is None:
            previous -= 1
        if previous >= 1 and previous <= len(self.origins):
            cell, cell_line = self.origins[previous - 1]
            return cell, cell_line + 1, 1
        return None

    def _start_of(self, line: int) -> tuple[int, int, bool] | None:
        """(cell, line, moved): a finding starting on a marker line shows at the next cell."""
        for candidate in range(max(line, 1), len(self.origins) + 1):
            if self.origins[candidate - 1] is not None:
                cell, cell_line = self.origins[candidate - 1]
                return cell, cell_line, candidate != line
        return None

    def _cell_reference(self, match: re.Match) -> str:
        located = self.locate(int(match.group(1)))
        return f"cell {located[0]}:{located[1]}" if located else match.group(0)

    def _json_line(self, cell: int, line: int) -> int | None:
        json_lines = next((c.json_lines for c in self.cells if c.number == cell), ())
        return json_lines[min(line, len(json_lines)) - 1] if json_lines else None

    def to_cells(self, finding: Finding) -> Finding:
        """The finding with cell-relative positions (and its fix, if it stays in one cell); the
        lines its message cites ("GradScaler line 11") become cell:line too."""
        start = self._start_of(finding.line)
        if start is None:  # past the last cell: should not happen, keep the program position
            return finding
        cell, line, moved = start
        column = 1 if moved else finding.column
        end = self.locate(finding.end_line, finding.end_column)
        if end is not None and end[0] == cell and (end[1], end[2]) >= (line, column):
            end_line, end_column = end[1], end[2]
        else:
            lines = self.cell_lines.get(cell, [])
            end_line = line
            end_column = len(lines[line - 1]) + 1 if 1 <= line <= len(lines) else column
        return dataclasses.replace(
            finding,
            cell=cell,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            fix=self._fix_in_cell(finding.fix, cell),
            message=_PROGRAM_LINE.sub(self._cell_reference, finding.message),
            file_line=self._json_line(cell, line),
        )

    def _fix_in_cell(self, fix: Fix | None, cell: int) -> Fix | None:
        # A fix reaching into another cell (an import added in cell 1) cannot be shown in
        # cell-relative coordinates; ``fix`` still applies it, through the program.
        if fix is None:
            return None
        edits = []
        for edit in fix.edits:
            start = self.locate(edit.line, edit.column)
            end = self.locate(edit.end_line, edit.end_column)
            if start is None or end is None or start[0] != cell or end[0] != cell:
                return None
            edits.append(Edit(start[1], start[2], end[1], end[2], edit.content))
        return dataclasses.replace(fix, edits=tuple(edits))

    def rebuild(self, new_text: str) -> str:
        """The notebook JSON with the cells of ``new_text`` (a fixed version of ``self.text``).

        Only the ``source`` values of cells whose code changed are rewritten. Raises
        NotebookError when the new program lost a cell marker or an IPython line."""
        by_cell = self._split_program(new_text)
        ensure_ascii = _uses_ascii_escapes(self.raw)
        replacements: list[tuple[int, int, str]] = []
        for cell in self.cells:
            new_lines = by_cell.get(cell.number)
            if new_lines is None:
                raise NotebookError(f"the fixed program lost cell {cell.number}")
            new_source = "\n".join(new_lines)
            if cell.source.endswith("\n") and new_lines:
                new_source += "\n"
            if new_source == cell.source:
                continue
            start, end = cell.source_span
            old_json = self.raw[start:end]
            replacements.append((start, end, _dump_source(new_source, cell.source_is_list, old_json, ensure_ascii)))
        pieces: list[str] = []
        cursor = 0
        for start, end, content in sorted(replacements):
            pieces.append(self.raw[cursor:start])
            pieces.append(content)
            cursor = end
        pieces.append(self.raw[cursor:])
        return "".join(pieces)

    def _split_program(self, new_text: str) -> dict[int, list[str]]:
        by_cell: dict[int, list[str]] = {}
        current: list[str] | None = None
        seen_magics: set[int] = set()
        for line in new_text.split("\n"):
            marker = _CELL_MARKER_LINE.match(line.rstrip("\r"))
            if marker:
                current = by_cell.setdefault(int(marker.group(1)), [])
                continue
            if current is None:
                if line.strip():
                    raise NotebookError("the fixed program has code before the first cell")
                continue
            magic = _MAGIC_LINE.match(line)
            if magic:
                key = int(magic.group(1))
                seen_magics.add(key)
                line = self.magics[key]
            current.append(line)
        if seen_magics != set(self.magics):
            raise NotebookError("the fixed program lost an IPython line")
        # The program ends with a newline: the last split element is the empty text after it.
        last = by_cell.get(self.cells[-1].number) if self.cells else None
        if last and last[-1] == "":
            last.pop()
        return by_cell


def _uses_ascii_escapes(raw: str) -> bool:
    return raw.isascii() and "\\u" in raw


def _dump_source(source: str, as_list: bool, old_json: str, ensure_ascii: bool) -> str:
    """A cell's new ``source`` value, laid out as the old one was (nbformat writes a list of
    lines, one per row, indented like its siblings)."""
    if not as_list:
        return json.dumps(source, ensure_ascii=ensure_ascii)
    parts = source.splitlines(keepends=True) if source else []
    if not parts:
        return "[]"
    match = re.match(r"\[(\s*)", old_json)
    opening = match.group(1) if match and old_json.strip() != "[]" else ""
    closing_match = re.search(r"(\s*)\]$", old_json)
    closing = closing_match.group(1) if closing_match and old_json.strip() != "[]" else ""
    separator = "," + opening if opening else ", "
    return "[" + opening + separator.join(json.dumps(part, ensure_ascii=ensure_ascii) for part in parts) + closing + "]"


def load_program(raw: str) -> NotebookProgram:
    """The notebook text (JSON) as one program. Raises NotebookError for a broken notebook."""
    cells = _read_cells(raw)
    program_lines: list[str] = []
    origins: list[tuple[int, int] | None] = []
    magics: dict[int, str] = {}

    def placeholder(original: str, indent: str) -> str:
        key = len(magics) + 1
        magics[key] = original
        return indent + MAGIC_PLACEHOLDER.format(key)

    for cell in cells:
        program_lines.append(CELL_MARKER.format(cell.number))
        origins.append(None)
        lines = _split_lines(cell.source)
        first_code = next((i for i, line in enumerate(lines) if line.strip()), None)
        whole_cell_magic = False
        if first_code is not None and lines[first_code].lstrip().startswith("%%"):
            name = lines[first_code].lstrip()[2:].split(maxsplit=1)
            whole_cell_magic = not name or name[0] not in PYTHON_BODY_CELL_MAGICS
        starts = _statement_starts(lines)
        magic_indent: str | None = None  # set while a ``!cmd \`` line continues on the next
        for index, line in enumerate(lines):
            if whole_cell_magic and line.strip():
                converted = placeholder(line, "")
            elif magic_indent is not None:
                converted = placeholder(line, magic_indent)
            elif starts[index] and line.strip() and is_ipython_line(line):
                indent = line[: len(line) - len(line.lstrip())]
                converted = placeholder(line, indent if not line.lstrip().startswith("%%") else "")
                magic_indent = indent
            else:
                converted = line
            if converted is line or not line.rstrip().endswith("\\"):
                magic_indent = None
            program_lines.append(converted)
            origins.append((cell.number, index + 1))
    text = "\n".join(program_lines) + "\n" if program_lines else ""
    return NotebookProgram(raw=raw, cells=cells, text=text, origins=origins, magics=magics)


def check_notebook(data: bytes, path: str, settings, *, prefilter: bool = True):
    """The FileReport of a notebook: findings in cell coordinates (``cell`` set)."""
    from dtype_lint.engine import PARSE_ERROR, FileReport, _parse_error, check_text

    try:
        raw = data.decode("utf-8-sig")
        program = load_program(raw)
    except UnicodeDecodeError as error:
        problem = NotebookError(f"not valid UTF-8 text: {error.reason}")
    except NotebookError as error:
        problem = error
    else:
        problem = None
    if problem is not None:
        findings = []
        if settings.is_selected(PARSE_ERROR, path):
            findings.append(_parse_error(path, problem.reason, problem.line, problem.column))
        return FileReport(path=path, findings=findings)
    report = check_text(program.text, path, settings, prefilter=prefilter)
    findings = [program.to_cells(finding) for finding in report.findings]
    return FileReport(
        path=path,
        findings=sort_findings(findings),
        internal_errors=report.internal_errors,
        # The program's lines (markers included): ``cell_line`` finds a cell's line in them.
        lines=program.text.split("\n")[:-1] if findings else None,
    )


def cell_line(program_lines: list[str], cell: int, line: int) -> str | None:
    """The text of ``line`` of ``cell`` in a notebook report's ``lines`` (the program's)."""
    marker = CELL_MARKER.format(cell)
    try:
        start = program_lines.index(marker)
    except ValueError:
        return None
    index = start + line
    if index < len(program_lines) and not _CELL_MARKER_LINE.match(program_lines[index]):
        return program_lines[index]
    return None


def fix_notebook(data: bytes, path: str, settings, options):
    """``dtype-lint fix`` for a notebook: the fixer runs on the program, the fixed cells go back
    into the JSON (``rebuild``). Returns the fixer's FileFixResult, findings in cell coordinates."""
    from dtype_lint.engine import check_bytes
    from dtype_lint.fixer.core import SkippedFix, fix_text
    from dtype_lint.fixer.files import FileFixResult, unified_diff

    try:
        raw = data.decode("utf-8-sig")
        program = load_program(raw)
    except (UnicodeDecodeError, NotebookError):
        return FileFixResult(path, remaining=check_bytes(data, path, settings).findings)
    outcome = fix_text(program.text, path, settings, unsafe=options.unsafe)
    result = FileFixResult(
        path,
        fixed=[program.to_cells(finding) for finding in outcome.fixed],
        remaining=[program.to_cells(finding) for finding in outcome.remaining],
        skipped=[SkippedFix(program.to_cells(skip.finding), skip.reason) for skip in outcome.skipped],
        failure=outcome.failure,
        internal_errors=list(outcome.internal_errors),
    )
    if not outcome.changed:
        return result
    try:
        new_raw = program.rebuild(outcome.text)
        fixed_program = load_program(new_raw)
    except NotebookError as error:
        return FileFixResult(
            path,
            remaining=check_bytes(data, path, settings).findings,
            failure=f"the fixed cells cannot be written back: {error.reason}",
            internal_errors=result.internal_errors,
        )
    if options.original_lines:  # --diff: nothing written, so the cells as they are
        from dtype_lint.fixer.files import as_found

        unfixed = as_found(outcome.remaining, outcome.text, program.text, path, settings)
        result.remaining = [program.to_cells(finding) for finding in unfixed]
    else:
        result.remaining = [fixed_program.to_cells(finding) for finding in outcome.remaining]
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    result.output = bom + new_raw.encode("utf-8")
    result.diff = unified_diff(raw, new_raw, path)
    return result

"""``# noqa``, ``# noqa: DTL301,DTL303`` and ``# dtype-lint: ignore[DTL301]`` comments, and the
file-level ``# dtype-lint: noqa[: CODES]`` and ``# flake8: noqa``.

The noqa syntax and matching are flake8's (same regular expressions, prefix match on codes), so
the CLI and the flake8 plugin suppress exactly the same findings. A suppression applies on the
reported line, on the first line of the statement that holds it, and, as flake8 maps it, on any
line of the reported line's token run: lines joined by backslash continuations or by a
multi-line string (flake8's ``_noqa_line_mapping``), so ``# noqa`` at the end of a continued
line covers the lines it continues. A file-level directive is a comment on a line of its own:
``# flake8: noqa`` skips the file as flake8 does (every code; not under flake8's
``--disable-noqa``), ``# dtype-lint: noqa`` every code, ``# dtype-lint: noqa: DTL201`` those codes.
"""

from __future__ import annotations

import dataclasses
import io
import re
import tokenize

NOQA = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
OWN_IGNORE = re.compile(r"#\s*dtype-lint:\s*ignore(?:\[(?P<codes>[A-Za-z0-9,\s]*)\])?")
# flake8's own file-level pattern (flake8.defaults.NOQA_FILE), matched at the start of a line.
FLAKE8_FILE_NOQA = re.compile(r"\s*# flake8[:=]\s*noqa", re.IGNORECASE)
FILE_NOQA = re.compile(r"\s*#\s*dtype-lint:\s*noqa(?:\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[,\s]+[A-Za-z]+[0-9]+)*))?\s*$",
                       re.IGNORECASE)
_SPLIT = re.compile(r"[,\s]+")
_ANY_DIRECTIVE = re.compile(r"noqa|dtype-lint\s*:", re.IGNORECASE)

ALL = None  # a bare suppression: every code


def _codes(text: str | None) -> frozenset[str] | None:
    if not text:
        return ALL
    return frozenset(code.upper() for code in _SPLIT.split(text.strip()) if code)


def _suppressed_by(match: re.Match | None, code: str) -> bool:
    if match is None:
        return False
    codes = _codes(match.group("codes"))
    return codes is ALL or code in codes or code.startswith(tuple(codes))


def line_suppresses(line: str, code: str, *, use_noqa: bool = True) -> bool:
    if "#" not in line:
        return False
    if use_noqa and _suppressed_by(NOQA.search(line), code):
        return True
    return _suppressed_by(OWN_IGNORE.search(line), code)


def names_code(line: str, code: str) -> bool:
    """A suppression comment on ``line`` that names ``code`` (or a prefix of it); not a bare one."""
    if "#" not in line:
        return False
    for match in (NOQA.search(line), OWN_IGNORE.search(line)):
        if match is not None and _codes(match.group("codes")) is not ALL and _suppressed_by(match, code):
            return True
    return False


def token_runs(text: str) -> dict[int, tuple[int, int]]:
    """Each line's run of lines (first, last) that no NEWLINE/NL token separates: lines joined by
    a backslash or spanned by one token (a multi-line string). flake8's grouping for noqa."""
    runs: dict[int, tuple[int, int]] = {}
    first = last = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            first = token.start[0] if first is None else min(first, token.start[0])
            last = token.end[0] if last is None else max(last, token.end[0])
            if token.type in (tokenize.NL, tokenize.NEWLINE):
                if last > first:
                    runs.update(dict.fromkeys(range(first, last + 1), (first, last)))
                first = last = None
    except (tokenize.TokenError, SyntaxError):
        return {}  # flake8 gives up on the mapping too
    return runs


@dataclasses.dataclass(frozen=True)
class Directive:
    """A line-level suppression comment: where it is, what it names (None: every code)."""

    line: int
    start: int  # 0-based columns of the comment directive in its line
    end: int
    kind: str  # "noqa" or "ignore"
    codes: tuple[str, ...] | None  # as written (upper-cased), None when bare


class FileSuppressions:
    """The suppression comments of one file's ``lines``, asked per finding; records which
    directive codes were used (for the unused-noqa rule, DTL002)."""

    def __init__(self, text: str, lines: list[str], use_noqa: bool = True) -> None:
        self.text = text
        self.lines = lines
        self.use_noqa = use_noqa
        self._runs: dict[int, tuple[int, int]] | None = None
        self._has_directives = _ANY_DIRECTIVE.search(text) is not None  # most files: nothing to look up
        self._file_codes = self._file_level() if self._has_directives else frozenset()
        self.used: set[tuple[int, str]] = set()  # (directive line, code as written or "" when bare)

    def _file_level(self) -> frozenset[str] | None:
        """The codes exempted file-wide (None: every code; empty: none)."""
        codes: set[str] = set()
        for line in self.lines:
            if "noqa" not in line.lower():
                continue
            if self.use_noqa and FLAKE8_FILE_NOQA.match(line):
                return ALL
            match = FILE_NOQA.match(line)
            if match is not None:
                found = _codes(match.group("codes"))
                if found is ALL:
                    return ALL
                codes |= found
        return frozenset(codes)

    def exempt(self, code: str) -> bool:
        """Whether a file-level directive exempts ``code`` in this whole file."""
        codes = self._file_codes
        return codes is ALL or bool(codes) and (code in codes or code.startswith(tuple(codes)))

    def directives(self, number: int) -> list[Directive]:
        if not 1 <= number <= len(self.lines) or "#" not in self.lines[number - 1]:
            return []
        line = self.lines[number - 1]
        found = []
        for kind, pattern, wanted in (("noqa", NOQA, self.use_noqa), ("ignore", OWN_IGNORE, True)):
            match = pattern.search(line) if wanted else None
            if match is not None:
                codes = _codes(match.group("codes"))
                written = None if codes is ALL else tuple(c.upper() for c in _SPLIT.split(match.group("codes").strip()) if c)
                found.append(Directive(number, match.start(), match.end(), kind, written))
        return found

    def _candidate_lines(self, line: int, statement_line: int) -> list[int]:
        numbers = [line, statement_line]
        if "\\" in self.text or '"""' in self.text or "'''" in self.text:  # runs of more than one line
            if self._runs is None:
                self._runs = token_runs(self.text)
            first, last = self._runs.get(line, (line, line))
            numbers += range(first, last + 1)
        return list(dict.fromkeys(numbers))

    def suppresses(self, code: str, line: int, statement_line: int) -> bool:
        """Whether a directive suppresses ``code`` reported on ``line`` (its statement starting at
        ``statement_line``); the directive's matching codes are recorded as used."""
        if not self._has_directives:
            return False
        if self.exempt(code):
            return True
        for number in self._candidate_lines(line, statement_line):
            for directive in self.directives(number):
                if directive.codes is None:
                    self.used.add((number, ""))
                    return True
                matching = [c for c in directive.codes if code == c or code.startswith(c)]
                if matching:
                    self.used.update((number, c) for c in matching)
                    return True
        return False

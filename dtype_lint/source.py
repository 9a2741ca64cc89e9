"""Turning a file's bytes into text, or into the reason why it cannot be checked.

Text is what CPython compiles: the encoding of PEP 263 (a coding cookie, else UTF-8). One quirk is
kept on purpose: CPython's tokenizer does not decode comments, so a UTF-8 file whose comments hold
other bytes (``# caf\xe9`` saved as Latin-1) compiles and imports (3.10 to 3.13). Such a file is
checked too: each of those bytes becomes one private-use character, ``chr(RAW_BYTE_BASE + byte)``
(libcst and ``ast`` need valid text; a position stays one character), and ``SourceText.encode``
turns them back into the very bytes, so a fix rewrites nothing else.
"""

from __future__ import annotations

import ast
import codecs
import dataclasses
import io
import re
import tokenize
import warnings

from dtype_lint.printable import RAW_BYTE_BASE

_RAW_BYTES = re.compile(f"[{chr(RAW_BYTE_BASE + 0x80)}-{chr(RAW_BYTE_BASE + 0xFF)}]")


@dataclasses.dataclass(frozen=True)
class SourceText:
    text: str
    encoding: str
    bom: bool
    # Bytes that are not UTF-8 in comments, held in ``text`` as private-use characters.
    raw_bytes: bool = False

    def encode(self, text: str) -> bytes:
        """``text`` (this source, edited) back into bytes, as the file had them."""
        if self.raw_bytes:
            surrogates = _RAW_BYTES.sub(lambda match: chr(0xDC00 + ord(match.group()) - RAW_BYTE_BASE), text)
            data = surrogates.encode(self.encoding, "surrogateescape")
            return codecs.BOM_UTF8 + data if self.bom else data
        return encode(text, self.encoding, self.bom)


class UndecodableSource(Exception):
    """A file that is binary or not in its declared encoding. ``line``/``column`` are 1-based."""

    def __init__(self, reason: str, line: int = 1, column: int = 1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.column = column


def decode(data: bytes) -> SourceText:
    if b"\0" in data[:8192]:
        raise UndecodableSource("binary file (contains NUL bytes), not Python source")
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "invalid or missing encoding declaration" not in str(error):
            raise UndecodableSource(f"bad encoding declaration: {error.msg}", error.lineno or 1) from None
        encoding = "utf-8"  # undeclared and not UTF-8: report where the first bad byte is
    raw_bytes = False
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        text = _comment_bytes_kept(data, encoding)
        if text is None:
            line = data.count(b"\n", 0, error.start) + 1
            column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
            raise UndecodableSource(f"not valid {encoding.upper()} text: {error.reason}", line, column) from None
        raw_bytes = True
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceText(text=text, encoding=encoding, bom=bom, raw_bytes=raw_bytes)


def _comment_bytes_kept(data: bytes, encoding: str) -> str | None:
    """The text of a UTF-8 file that CPython compiles although some of its bytes are not UTF-8
    (they are in comments), with those bytes as private-use characters; else None."""
    if codecs.lookup(encoding).name not in ("utf-8", "utf-8-sig") or _RAW_BYTES.search(
        data.decode("utf-8", "replace")
    ):
        return None  # another codec's error, or the characters that stand for raw bytes already occur
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "<source>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    surrogates = data.decode("utf-8", "surrogateescape")
    return re.sub("[\udc80-\udcff]", lambda match: chr(RAW_BYTE_BASE + ord(match.group()) - 0xDC00), surrogates)


def encode(text: str, encoding: str, bom: bool) -> bytes:
    data = text.encode(encoding)
    return codecs.BOM_UTF8 + data if bom else data

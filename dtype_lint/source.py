"""Turning a file's bytes into text, or into the reason why it cannot be checked."""

from __future__ import annotations

import codecs
import dataclasses
import io
import tokenize


@dataclasses.dataclass(frozen=True)
class SourceText:
    text: str
    encoding: str
    bom: bool


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
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise UndecodableSource(f"not valid {encoding.upper()} text: {error.reason}", line, column) from None
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceText(text=text, encoding=encoding, bom=bom)


def encode(text: str, encoding: str, bom: bool) -> bytes:
    data = text.encode(encoding)
    return codecs.BOM_UTF8 + data if bom else data

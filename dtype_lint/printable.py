"""Text from a checked tree (file names, source lines, messages that quote code, cache entries) as
a terminal may show it: characters a terminal acts on are written as escapes instead.

- C0 controls but tab, DEL and C1 controls (ESC sequences set the window title, clear the screen,
  fake other output): ``\\x1b``, ``\\n``;
- bidirectional overrides and isolates, which reorder what follows them (Trojan Source): ``\\u202e``;
- bytes that are not UTF-8, from a file name (``surrogateescape``) or from a comment CPython
  accepts (source.py): ``\\xe9``.

The text formats, ``github`` and every message on stderr go through ``printable``; the JSON
formats escape control characters themselves. Escaping twice changes nothing (an escape is
plain ASCII).
"""

from __future__ import annotations

import re

# source.py maps a comment's non-UTF-8 byte b to chr(RAW_BYTE_BASE + b) (private use, plane 16).
RAW_BYTE_BASE = 0x10FF00
_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
    f"{chr(RAW_BYTE_BASE + 0x80)}-{chr(RAW_BYTE_BASE + 0xFF)}]"
)
_SURROGATE_BYTES = re.compile("[\udc80-\udcff]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape kept
        return f"\\x{code - 0xDC00:02x}"
    if code > 0xFFFF:
        return f"\\x{code - RAW_BYTE_BASE:02x}"
    return f"\\u{code:04x}"


def printable(text: str, *, keep_line_breaks: bool = False) -> str:
    """``text`` with every character a terminal would act on written as an escape;
    ``keep_line_breaks``: but CR and LF (a format that escapes them its own way)."""
    if keep_line_breaks:
        return _UNSAFE.sub(lambda match: match.group() if match.group() in _NAMED else _escape(match), text)
    return _UNSAFE.sub(_escape, text)


def unicode_path(path: str) -> str:
    """A path as valid Unicode: the bytes of a name that is not UTF-8 (decoded with
    ``surrogateescape``, as Python gives file names) as ``\\xNN``. Output of any format can hold it."""
    return _SURROGATE_BYTES.sub(_escape, path)

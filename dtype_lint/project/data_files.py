"""Config data files beside the code (YAML, TOML, JSON): their precision settings by key path.

A training script often takes its precision from a file: ``config.toml`` with
``mixed_precision = "bf16"``, ``config.yaml`` with ``fp16: true``, ``configs/config.json`` with
``"fp16_run": true``. ``dtype-lint check DIR`` reads the ``*.yaml``/``*.yml``/``*.toml``/``*.json``
files found under DIR (the same walk as the Python files: excludes, .gitignore, skipped folders)
and indexes each leaf setting by its key path (``training.mixed_precision``). Only settings that
can carry a precision are kept: booleans and strings under a key that names one (``fp16``,
``bf16``, ``amp``, ``mixed_precision``, ``precision``, ``dtype``, ``half``...) and strings that
spell one (``"bf16"``, ``"float16"``, ``"16-mixed"``). The index is small, so it is handed whole
to each file that loads a config.

Nothing here executes anything: JSON through ``json``, TOML through ``tomllib``/``tomli``, YAML
through a small reader of block mappings (``key: value``, nested by indentation; sequences,
anchors, multi-line and flow values are skipped). A file that cannot be read or parsed, or is
larger than ``MAX_BYTES``, is skipped without a word: data files only feed facts, findings are
only ever reported on Python files.
"""

from __future__ import annotations

import json
import os
import re

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

MAX_BYTES = 256 * 1024  # a config file; larger JSON is data (a dataset, a vocabulary), not settings
MAX_DEPTH = 8
# Keys whose boolean or string values can decide a precision.
PRECISION_KEY = re.compile(r"(^|_|-)(fp16|bf16|fp32|half|amp|mixed|precision|dtype|autocast|float16|bfloat16|"
                           r"scaler|fp16_run|use_fp16|use_bf16)($|_|-)|fp16|bf16", re.IGNORECASE)
# String values that name a precision, whatever the key.
PRECISION_VALUE = re.compile(r"^(fp16|bf16|fp32|float16|bfloat16|float32|half|16|32|16-mixed|bf16-mixed|16-true|"
                             r"bf16-true|32-true|no)$", re.IGNORECASE)


def read_data_file(path: str, display: str) -> dict[str, list]:
    """``{"training.mixed_precision": [["bf16", "config.toml:2"]], ...}`` for one file (empty
    when it cannot be read or parsed)."""
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return {}
        with open(path, "rb") as handle:
            data = handle.read()
        text = data.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    try:
        if path.endswith(".json"):
            leaves = _leaves(json.loads(text))
        elif path.endswith(".toml"):
            leaves = _leaves(tomllib.loads(text))
        else:
            leaves = yaml_leaves(text)
    except (ValueError, TypeError, RecursionError, tomllib.TOMLDecodeError):
        return {}
    lines = text.splitlines()
    index: dict[str, list] = {}
    for keys, value, line in leaves:
        if not precision_setting(keys, value):
            continue
        line = line or _line_of(lines, keys[-1])
        index.setdefault(".".join(keys), []).append([value, f"{display}:{line}"])
    return index


def merge_indexes(indexes) -> dict[str, list]:
    """One index of many files, each key's values in file order, without repeats."""
    merged: dict[str, list] = {}
    for index in indexes:
        for key, values in index.items():
            known = merged.setdefault(key, [])
            for item in values:
                if item not in known:
                    known.append(item)
    return {key: merged[key] for key in sorted(merged)}


def precision_setting(keys: tuple[str, ...], value) -> bool:
    """Whether a setting can carry a precision (see the module docstring)."""
    if isinstance(value, bool):
        return bool(PRECISION_KEY.search(keys[-1]))
    if isinstance(value, str):
        return bool(PRECISION_VALUE.match(value)) or (bool(PRECISION_KEY.search(keys[-1])) and len(value) <= 32)
    return False


def _leaves(data, prefix: tuple[str, ...] = (), depth: int = 0):
    """(key path, scalar value, line or 0) of every leaf of nested dicts (lists are not entered)."""
    if depth > MAX_DEPTH or not isinstance(data, dict):
        return
    for key, value in data.items():
        path = (*prefix, str(key))
        if isinstance(value, dict):
            yield from _leaves(value, path, depth + 1)
        elif isinstance(value, (bool, str, int, float)):
            yield path, value, 0


def _line_of(lines: list[str], key: str) -> int:
    """The first line that sets ``key`` (TOML and JSON parsers give no positions)."""
    pattern = re.compile(r'^\s*["\']?' + re.escape(key) + r'["\']?\s*[=:]|["\']' + re.escape(key) + r'["\']\s*:')
    for number, text in enumerate(lines, start=1):
        if pattern.search(text):
            return number
    return 1


# -- a small YAML reader: block mappings of scalars --------------------------------------------
_YAML_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.\-/]+|\"[^\"]*\"|'[^']*')\s*:(?:\s+(?P<value>.*))?$")
_YAML_TRUE = frozenset({"true", "yes", "on"})
_YAML_FALSE = frozenset({"false", "no", "off"})


def yaml_leaves(text: str):
    """(key path, scalar, line) of the block mappings of a YAML text, as ``yaml.safe_load`` reads
    them (YAML 1.1 booleans). Lines it does not understand are skipped, with what they hold."""
    stack: list[tuple[int, str]] = []  # (indent, key) of the open mappings
    skip_deeper: int | None = None  # inside a value this reader does not read (a block string, a list)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).rstrip()
        if not line.strip():
            continue
        if line.strip() in ("---", "..."):
            stack, skip_deeper = [], None
            continue
        indent = len(line) - len(line.lstrip(" "))
        if skip_deeper is not None:
            if indent > skip_deeper:
                continue
            skip_deeper = None
        match = _YAML_KEY.match(line)
        if match is None:
            # a sequence item, a flow value, a tab: skip it and whatever it holds
            skip_deeper = indent
            continue
        key = match.group("key").strip("\"'")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        value = (match.group("value") or "").strip()
        path = (*(k for _, k in stack), key)
        if not value:
            if len(stack) < MAX_DEPTH:
                stack.append((indent, key))
            else:
                skip_deeper = indent
            continue
        if value[0] in "|>[{&*!":
            skip_deeper = indent
            continue
        scalar = _yaml_scalar(value)
        if scalar is not None:
            yield path, scalar, number


def _strip_comment(line: str) -> str:
    """The line without a ``# comment`` (a ``#`` inside quotes stays)."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index]
    return line


def _yaml_scalar(value: str):
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    lowered = value.lower()
    if lowered in _YAML_TRUE:
        return True
    if lowered in _YAML_FALSE:
        return False
    if lowered in ("null", "~"):
        return None
    if re.fullmatch(r"[-+]?\d+", value):
        return int(value)
    if re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", value):
        return float(value)
    return value

"""Options shared by ``check`` and ``fix``, and turning them into Settings and files."""

from __future__ import annotations

import argparse
import os

from dtype_lint.config import OUTPUT_FORMATS, SELECTOR, Settings, load_settings, with_overrides
from dtype_lint.errors import UsageError
from dtype_lint.findings import Confidence


def _codes(text: str) -> tuple[str, ...]:
    codes = tuple(code.strip().upper() for code in text.split(",") if code.strip())
    for code in codes:
        if not SELECTOR.match(code):
            raise argparse.ArgumentTypeError(f"invalid rule selector {code!r}")
    return codes


def _confidence(text: str) -> Confidence:
    try:
        return Confidence.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", default=None, help="files or directories ('-' for stdin)")
    parser.add_argument("--select", type=_codes, help="comma-separated rule codes or prefixes to enable")
    parser.add_argument("--ignore", type=_codes, help="comma-separated rule codes or prefixes to disable")
    parser.add_argument("--extend-select", type=_codes, help="codes to enable on top of the selection")
    parser.add_argument("--min-confidence", type=_confidence, help="high, medium (default) or low")
    parser.add_argument("--config", help="a pyproject.toml (or a TOML file holding the table)")
    parser.add_argument("--jobs", "-j", type=positive_int, help="worker processes (default: all cores)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--stdin-filename", help="the name to report for source read from stdin")
    parser.add_argument("--format", "--output-format", dest="format", choices=OUTPUT_FORMATS)


def _stdin_config_start(stdin_filename: str | None) -> str:
    """Where config lookup starts for stdin: the named file's directory, or its nearest existing
    ancestor (an editor's unsaved buffer may name a directory that does not exist yet)."""
    directory = os.path.dirname(stdin_filename or "") or "."
    while not os.path.isdir(directory) and os.path.dirname(directory) not in ("", directory):
        directory = os.path.dirname(directory)
    return directory if os.path.isdir(directory) else "."


def settings_from_args(args: argparse.Namespace) -> Settings:
    paths = args.paths or ["."]
    start = paths[0] if paths[0] != "-" else _stdin_config_start(args.stdin_filename)
    if start != "-" and not os.path.exists(start):
        raise UsageError(f"{start}: no such file or directory")
    settings = load_settings(start, args.config)
    return with_overrides(
        settings,
        select=args.select,
        ignore=args.ignore,
        extend_select=args.extend_select,
        min_confidence=args.min_confidence,
        output_format=args.format,
    )

"""Options shared by ``check`` and ``fix``, and turning them into Settings and files."""

from __future__ import annotations

import argparse
import os

from dtype_lint.config import OUTPUT_FORMATS, VERSION, Settings
from dtype_lint.errors import UsageError
from dtype_lint.findings import Confidence


def _codes(text: str) -> tuple[str, ...]:
    from dtype_lint.selectors import parse_selectors

    try:
        return parse_selectors(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _version(text: str) -> str:
    if not VERSION.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected a version such as 2.4, got {text!r}")
    return text


def _python_version(text: str) -> str:
    from dtype_lint.versions import python_version

    version = python_version(text)
    if version is None:
        raise argparse.ArgumentTypeError(f"expected a Python version such as 3.12 or py312, got {text!r}")
    return version


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
    parser.add_argument("--select", type=_codes, help="comma-separated rule codes, prefixes or names to enable")
    parser.add_argument("--ignore", type=_codes, help="comma-separated rule codes, prefixes or names to disable")
    parser.add_argument("--extend-select", type=_codes, help="codes to enable on top of the selection")
    parser.add_argument("--min-confidence", type=_confidence, help="high, medium (default) or low")
    parser.add_argument("--config", help="a pyproject.toml (or a TOML file holding the table)")
    parser.add_argument("--jobs", "-j", type=positive_int, help="worker processes (default: all cores)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--no-project", action="store_true",
                        help="check each file on its own (no whole-program pass; what flake8 reports)")
    parser.add_argument("--stdin-filename", help="the name to report for source read from stdin")
    parser.add_argument("--format", "--output-format", dest="format", choices=OUTPUT_FORMATS)
    parser.add_argument("--extend-exclude", type=_patterns, metavar="PATTERNS",
                        help="comma-separated patterns to exclude on top of `exclude`")
    parser.add_argument("--force-exclude", action=argparse.BooleanOptionalAction, default=None,
                        help="apply excludes to files named on the command line too (pre-commit's hook does)")
    parser.add_argument("--target-torch", type=_version, metavar="VERSION",
                        help="oldest torch the code must run on (default: read from the project's dependencies);"
                             " API-migration rules suggest only what it has")
    parser.add_argument("--target-transformers", type=_version, metavar="VERSION",
                        help="oldest transformers the code must run on (default: read from the project)")
    parser.add_argument("--target-version", type=_python_version, metavar="VERSION",
                        help="oldest Python the code must run on, 3.12 or py312 (default: requires-python)")
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-q", "--quiet", action="count", default=0,
                           help="print findings only, no summary (-qq: print nothing, exit status only)")
    verbosity.add_argument("-v", "--verbose", action="store_true",
                           help="also say which configuration each file took and how long the run took")


def _patterns(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _stdin_config_start(stdin_filename: str | None) -> str:
    """Where config lookup starts for stdin: the named file's directory, or its nearest existing
    ancestor (an editor's unsaved buffer may name a directory that does not exist yet)."""
    directory = os.path.dirname(stdin_filename or "") or "."
    while not os.path.isdir(directory) and os.path.dirname(directory) not in ("", directory):
        directory = os.path.dirname(directory)
    return directory if os.path.isdir(directory) else "."


def resolver_from_args(args: argparse.Namespace):
    """Settings per file: the nearest config above each, the command line's flags on top."""
    from dtype_lint.resolver import SettingsResolver

    return SettingsResolver(
        args.config,
        dict(
            select=args.select,
            ignore=args.ignore,
            extend_select=args.extend_select,
            min_confidence=args.min_confidence,
            output_format=args.format,
            force_exclude=args.force_exclude,
            target_torch=args.target_torch,
            target_transformers=args.target_transformers,
            target_version=args.target_version,
        ),
        extend_exclude=args.extend_exclude or (),
    )


def settings_from_args(args: argparse.Namespace, resolver=None) -> Settings:
    """The run's own settings (output format, cache directory, stdin): those of the first path."""
    paths = args.paths or ["."]
    start = paths[0] if paths[0] != "-" else _stdin_config_start(args.stdin_filename)
    if not os.path.exists(start):
        raise UsageError(f"{start}: no such file or directory")
    return (resolver or resolver_from_args(args)).for_path(start)

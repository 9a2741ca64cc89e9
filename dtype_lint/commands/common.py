"""Options shared by ``check`` and ``fix``, and turning them into Settings and files."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from dtype_lint.config import OUTPUT_FORMAT_CHOICES, VERSION, Settings, output_format_name
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
    parser.add_argument("paths", nargs="*", default=None,
                        help="files or directories (default: '.'; '-' or only --stdin-filename: stdin)")
    parser.add_argument("--select", type=_codes, help="comma-separated rule codes, prefixes or names to enable")
    parser.add_argument("--ignore", type=_codes, help="comma-separated rule codes, prefixes or names to disable")
    parser.add_argument("--extend-select", type=_codes, help="codes to enable on top of the selection")
    parser.add_argument("--min-confidence", type=_confidence, help="high, medium (default) or low")
    parser.add_argument("--config", metavar="FILE",
                        help="the config to use instead of discovering one: a pyproject.toml, a dtype-lint.toml "
                             "or any TOML file holding the table")
    parser.add_argument("--jobs", "-j", type=positive_int, help="worker processes (default: all cores)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--no-project", action="store_true",
                        help="check each file on its own (no whole-program pass; what flake8 reports)")
    parser.add_argument("--stdin-filename",
                        help="the name to report for source read from stdin (read when no path is given, as ruff)")
    parser.add_argument("--format", "--output-format", dest="format", type=output_format_name,
                        choices=OUTPUT_FORMAT_CHOICES, metavar="FORMAT",
                        help=f"how to print findings: {', '.join(OUTPUT_FORMAT_CHOICES)} (full: text)")
    parser.add_argument("-o", "--output-file", metavar="FILE",
                        help="write what would go to stdout to FILE instead (its folders are created)")
    parser.add_argument("--exclude", type=_patterns, metavar="PATTERNS",
                        help="comma-separated patterns to exclude, replacing `exclude` (relative to the working directory)")
    parser.add_argument("--extend-exclude", type=_patterns, metavar="PATTERNS",
                        help="comma-separated patterns to exclude on top of `exclude`")
    parser.add_argument("--per-file-ignores", type=_per_file_ignores, action="append", metavar="PATTERN:CODES",
                        help="codes to ignore in files matching PATTERN, replacing `per-file-ignores` "
                             "(`tests/*:DTL301,DTL302 scripts/*:DTL2`; repeatable)")
    parser.add_argument("--extend-per-file-ignores", type=_per_file_ignores, action="append",
                        metavar="PATTERN:CODES", help="as --per-file-ignores, on top of `per-file-ignores`")
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


def _per_file_ignores(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """flake8's and ruff's spelling: ``PATTERN:CODE[,CODE...]`` items separated by spaces or
    commas; a bare code after an item adds to that item's pattern."""
    from dtype_lint.selectors import normalise_selector

    pairs: list[tuple[str, list[str]]] = []
    for item in text.replace(",", " ").split():
        pattern, colon, code = item.rpartition(":")
        if colon and not pattern:
            raise argparse.ArgumentTypeError(f"expected PATTERN:CODES, got {item!r}")
        if colon:
            pairs.append((pattern, []))
        elif not pairs:
            raise argparse.ArgumentTypeError(f"expected PATTERN:CODES, got {text!r}")
        try:
            pairs[-1][1].append(normalise_selector(code))
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    if not pairs:
        raise argparse.ArgumentTypeError(f"expected PATTERN:CODES, got {text!r}")
    return tuple((pattern, tuple(codes)) for pattern, codes in pairs)


def _from_working_directory(pattern: str) -> str:
    """A command-line pattern with a folder in it names paths from the working directory (as
    ruff's do); a bare name matches at any depth, as in the config."""
    return os.path.abspath(pattern) if "/" in pattern.rstrip("/") else pattern


def _joined(groups) -> tuple | None:
    if groups is None:
        return None
    return tuple((_from_working_directory(pattern), codes) for group in groups for pattern, codes in group)


def given_paths(args: argparse.Namespace) -> list[str]:
    """The paths to check: those given, stdin when only ``--stdin-filename`` is (ruff's habit),
    else the working directory."""
    if args.paths:
        return args.paths
    return ["-"] if args.stdin_filename else ["."]


@contextlib.contextmanager
def output_to(args: argparse.Namespace):
    """``-o FILE``: what the command prints on stdout goes to FILE."""
    if not getattr(args, "output_file", None):
        yield
        return
    folder = os.path.dirname(args.output_file)
    try:
        if folder:
            os.makedirs(folder, exist_ok=True)
        handle = open(args.output_file, "w", encoding="utf-8", newline="")
    except OSError as error:
        raise UsageError(f"cannot write {args.output_file}: {error.strerror}") from None
    with handle, contextlib.redirect_stdout(handle):
        yield


def unreadable_reports(errors, resolver, quiet: int = 0) -> list:
    """DTL001 reports for the paths discovery could not check; a warning for those whose
    settings do not select DTL001 (ruff's E902 and its warning)."""
    from dtype_lint.engine import unreadable_report

    reports = []
    for problem in errors:
        report = unreadable_report(problem, resolver(problem.path))
        if report is not None:
            reports.append(report)
        elif quiet < 2:
            from dtype_lint.printable import printable

            print(f"dtype-lint: warning: {printable(problem.path)}: {problem.reason}", file=sys.stderr)
    return reports


def _stdin_config_start(stdin_filename: str | None) -> str:
    """Where config lookup starts for stdin (or a path that does not exist): the named file's
    directory, or its nearest existing ancestor (an editor's unsaved buffer may name a directory
    that does not exist yet)."""
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
            exclude=tuple(_from_working_directory(p) for p in args.exclude) if args.exclude is not None else None,
            per_file_ignores=_joined(args.per_file_ignores),
        ),
        extend_exclude=tuple(_from_working_directory(p) for p in args.extend_exclude or ()),
        extend_per_file_ignores=_joined(args.extend_per_file_ignores) or (),
    )


def settings_from_args(args: argparse.Namespace, resolver=None) -> Settings:
    """The run's own settings (output format, cache directory, stdin): those of the first path
    (of its nearest existing folder when it does not exist: it is reported, the others checked)."""
    first = given_paths(args)[0]
    if first == "-":
        start = _stdin_config_start(args.stdin_filename)
    else:
        start = first if os.path.exists(first) else _stdin_config_start(first)
    return (resolver or resolver_from_args(args)).for_path(start)

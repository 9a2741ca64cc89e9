"""``dtype-lint check PATHS``: report findings; exit 1 when there are any, 2 on errors."""

from __future__ import annotations

import argparse
import sys

from dtype_lint.commands.common import add_common_arguments, settings_from_args


def add_baseline_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("baseline (adopting on code with findings; see baseline.py)")
    group.add_argument("--baseline", metavar="FILE", help="report only findings not recorded in FILE")
    group.add_argument(
        "--write-baseline", metavar="FILE", help="record every finding in FILE (replacing it) and exit 0"
    )


def _baseline(args: argparse.Namespace, reports, settings) -> list | int:
    """``--write-baseline`` (an exit status) or ``--baseline``/``baseline =`` (the reports left)."""
    if args.write_baseline:
        from dtype_lint.baseline import write_baseline

        count = write_baseline(args.write_baseline, reports)
        print(f"dtype-lint: wrote {count} finding(s) to {args.write_baseline}", file=sys.stderr)
        return 0
    file = args.baseline or settings.baseline
    if not file:
        return reports
    from dtype_lint.baseline import apply_baseline

    result = apply_baseline(reports, file, settings)
    if result.stale:
        print(
            f"dtype-lint: {result.stale} baseline entr{'y' if result.stale == 1 else 'ies'} no longer match "
            f"a finding (fixed or changed); refresh with --write-baseline {file}",
            file=sys.stderr,
        )
    return result.reports


def configure(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    parser.add_argument(
        "--diff-base",
        metavar="REF",
        help="report only findings on lines added or changed since the git revision REF (review mode)",
    )
    add_baseline_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from dtype_lint.discover import discover
    from dtype_lint.engine import check_bytes, check_files
    from dtype_lint.report import render

    settings = settings_from_args(args)
    paths = args.paths or ["."]
    if paths == ["-"]:
        name = args.stdin_filename or "-"
        data = sys.stdin.buffer.read()
        reports = [check_bytes(data, name, settings)]
    else:
        files = discover(paths, settings)
        cache = None
        if not args.no_cache:
            from dtype_lint.cache import Cache, cache_directory

            cache = Cache(cache_directory(settings), settings)
        reports = check_files(files, settings, args.jobs, cache=cache)
    internal = [error for report in reports for error in report.internal_errors]
    reports = _baseline(args, reports, settings)
    if isinstance(reports, int):  # the baseline was written
        for error in internal:
            print(f"dtype-lint: error: {error}", file=sys.stderr)
        return 2 if internal else reports
    if args.diff_base is not None:
        from dtype_lint.review import collect_changes, only_changed

        # The repository is the one holding the first path (the working directory for stdin).
        stdin = (name, data) if paths == ["-"] else None
        changes = collect_changes(args.diff_base, "." if stdin else paths[0], stdin)
        reports = only_changed(reports, changes)
    render(settings.output_format, reports, sys.stdout)
    for error in internal:
        print(f"dtype-lint: error: {error}", file=sys.stderr)
    if internal:
        return 2
    has_findings = any(report.findings for report in reports)
    return 1 if has_findings and not args.exit_zero else 0

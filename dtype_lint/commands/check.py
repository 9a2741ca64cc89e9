"""``dtype-lint check PATHS``: report findings; exit 1 when there are any, 2 on errors.

``--fix`` / ``--diff`` make it ``dtype-lint fix`` (ruff's habit; ``--unsafe-fixes`` alone only
shows unsafe fixes as applicable, as in ruff); ``--add-noqa``, ``--statistics``, ``--show-files``
and ``--show-settings`` are other views of the same run, ``--watch`` repeats it on changes.
"""

from __future__ import annotations

import argparse
import sys
import time

from dtype_lint.commands.common import (
    add_common_arguments, given_paths, output_to, resolver_from_args, settings_from_args, unreadable_reports,
)
from dtype_lint.wording import plural, verb


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
        print(f"dtype-lint: wrote {plural(count, 'finding')} to {args.write_baseline}", file=sys.stderr)
        return 0
    file = args.baseline or settings.baseline
    if not file:
        return reports
    from dtype_lint.baseline import apply_baseline

    result = apply_baseline(reports, file, settings)
    if result.stale:
        print(
            f"dtype-lint: {plural(result.stale, 'baseline entry')} no longer {verb(result.stale, 'matches', 'match')} "
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
    fixing = parser.add_argument_group("fixing (as `dtype-lint fix`)")
    fixing.add_argument("--fix", action="store_true", help="apply the safe fixes: `dtype-lint fix`")
    fixing.add_argument("--unsafe-fixes", action="store_true",
                        help="show unsafe fixes as applicable; with --fix or --diff, apply them too (as ruff)")
    fixing.add_argument("--diff", action="store_true", help="print the fixes as a diff, write nothing: `dtype-lint fix --diff`")
    fixing.add_argument("--exit-non-zero-on-fix", action="store_true", help="with --fix: exit 1 when a file changed")
    views = parser.add_argument_group("other views of the run")
    views.add_argument("--statistics", action="store_true", help="count findings per rule instead of listing them")
    views.add_argument("--add-noqa", action="store_true", help="append `# noqa: CODE` to every reported line")
    views.add_argument("--show-files", action="store_true", help="list the files that would be checked, and exit")
    views.add_argument("--show-settings", action="store_true", help="print the settings the first path gets, and exit")
    views.add_argument("--watch", action="store_true",
                       help="check again whenever a checked file changes (polling; Ctrl-C stops)")


def run(args: argparse.Namespace) -> int:
    from dtype_lint.errors import UsageError

    if args.fix or args.diff:
        from dtype_lint.commands import fix

        if args.diff_base or args.statistics or args.add_noqa or args.watch:
            raise UsageError("--fix/--diff do not combine with --diff-base, --statistics, --add-noqa or --watch")
        return fix.run(args)
    paths = given_paths(args)
    if args.add_noqa and paths == ["-"]:
        raise UsageError("--add-noqa edits files: give paths, not '-'")
    if args.watch:
        if paths == ["-"] or args.add_noqa or args.write_baseline or args.show_files or args.show_settings:
            raise UsageError("--watch checks files: it does not combine with stdin, --add-noqa, --write-baseline, "
                             "--show-files or --show-settings")
        import os

        from dtype_lint.commands.watch import watch

        ignored = frozenset({os.path.abspath(args.output_file)} if args.output_file else ())
        return watch(lambda: _checked(args, paths), paths, ignored)
    return _checked(args, paths)


def _checked(args: argparse.Namespace, paths: list[str]) -> int:
    with output_to(args):  # -o: each run (each round of --watch) writes the file anew
        return _run_once(args, paths)


def _run_once(args: argparse.Namespace, paths: list[str]) -> int:
    from dtype_lint.discover import discover, discover_data, warn_if_empty
    from dtype_lint.engine import check_bytes, check_files
    from dtype_lint.report import render

    started = time.perf_counter()
    resolver = resolver_from_args(args)
    settings = settings_from_args(args, resolver)
    if args.show_settings:
        from dtype_lint.commands.views import show_settings

        show_settings(paths, settings, sys.stdout)
        return 0
    unreadable: list = []
    if paths == ["-"]:
        from dtype_lint.printable import unicode_path

        name = unicode_path(args.stdin_filename or "-")
        data = sys.stdin.buffer.read()
        reports = [check_bytes(data, name, settings)]
    else:
        files = discover(paths, resolver, unreadable)
        if args.show_files:
            from dtype_lint.printable import printable

            for display, _ in files:
                print(printable(display))
            for problem in unreadable:
                print(f"dtype-lint: warning: {printable(problem.path)}: {problem.reason}", file=sys.stderr)
            return 0
        warn_if_empty(files, paths, args.quiet, unreadable)
        cache = None
        if not args.no_cache:
            from dtype_lint.cache import open_cache
            from dtype_lint.printable import printable

            cache, warning = open_cache(settings)
            if warning and args.quiet < 2:
                print(f"dtype-lint: warning: {printable(warning)}", file=sys.stderr)
        data = [] if args.no_project else discover_data(paths, resolver)
        reports = check_files(files, settings, args.jobs, cache=cache, settings_for=resolver,
                              project=not args.no_project, data=data)
        reports = sorted(reports + unreadable_reports(unreadable, resolver, args.quiet), key=lambda r: r.path)
        if args.verbose:
            from dtype_lint.commands.views import describe_configs

            describe_configs(files, resolver, sys.stderr)
    baselined = _baseline(args, reports, settings)
    if isinstance(baselined, int):  # the baseline was written
        return _report_errors(reports) or baselined
    reports = baselined
    if args.diff_base is not None:
        from dtype_lint.review import collect_changes, only_changed

        # The repository is the one holding the first path (the working directory for stdin).
        stdin = (name, data) if paths == ["-"] else None
        changes = collect_changes(args.diff_base, "." if stdin else paths[0], stdin)
        reports = only_changed(reports, changes)
    if args.add_noqa:
        from dtype_lint.noqa_adder import add_noqa

        outcome = add_noqa(reports, dict(files), sys.stderr)
        if args.quiet < 2:
            print(f"Added {plural(outcome.added, 'noqa directive')}.")
        # A finding left without a directive fails the next check: say so now (exit 1), as an
        # unwritable file does (exit 2).
        return _report_errors(reports) or (2 if outcome.failed else 1 if outcome.unplaced else 0)
    if args.quiet < 2:
        if args.statistics:
            from dtype_lint.commands.views import statistics

            statistics(reports, settings.output_format, sys.stdout, args.unsafe_fixes)
        else:
            render(settings.output_format, reports, sys.stdout, show_summary=not args.quiet and bool(reports),
                   unsafe_fixes=args.unsafe_fixes)
    if args.verbose:
        print(f"dtype-lint: checked {plural(len(reports), 'file')} in {time.perf_counter() - started:.2f}s",
              file=sys.stderr)
    status = _report_errors(reports)
    if status:
        return status
    has_findings = any(report.findings for report in reports)
    return 1 if has_findings and not args.exit_zero else 0


def _report_errors(reports) -> int:
    """Print internal errors (one line each); 2 when there were any."""
    from dtype_lint.printable import printable

    internal = [error for report in reports for error in report.internal_errors]
    for error in internal:
        print(f"dtype-lint: error: {printable(error)}", file=sys.stderr)
    return 2 if internal else 0

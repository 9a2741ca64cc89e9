"""``dtype-lint fix PATHS``: apply the fixes findings carry; report what changed and what is left.

Exit status: 0 when no finding is left, 1 when some remain (or a file could not be fixed),
``--exit-non-zero-on-fix`` also 1 when a file changed (pre-commit's convention); ``--diff``: 1 when
there is a diff. 2 for usage errors and internal errors, as ``check``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import TextIO

from dtype_lint.commands.common import (
    add_common_arguments, given_paths, output_to, resolver_from_args, settings_from_args, unreadable_reports,
)
from dtype_lint.wording import plural


def configure(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)
    parser.add_argument(
        "--unsafe-fixes", action="store_true", help="also apply fixes that may change numerics or behaviour"
    )
    parser.add_argument("--diff", action="store_true", help="print a unified diff of the fixes; write nothing")
    parser.add_argument(
        "--exit-non-zero-on-fix", action="store_true", help="exit 1 when any file was changed, even if nothing is left"
    )


def _report(results, settings, unsafe: bool, diff_mode: bool, out: TextIO, err: TextIO, quiet: int = 0) -> None:
    from dtype_lint.engine import FileReport
    from dtype_lint.findings import Safety
    from dtype_lint.fixer.files import remaining_findings
    from dtype_lint.printable import printable
    from dtype_lint.report import render
    from dtype_lint.report.text_format import headline, location

    remaining = remaining_findings(results)
    if quiet >= 2:  # -qq: the exit status says it all; errors still go to stderr
        out = _Discard()
    if settings.output_format in ("text", "concise"):
        for finding in remaining:
            out.write(f"{headline(finding, show_fixable=False)}\n")
    else:  # machine formats get the findings that are left, in their own shape
        render(settings.output_format, [FileReport(r.path, r.remaining) for r in results], out)
        out = err
    for result in results:
        if result.fixed:
            counts = Counter(finding.code for finding in result.fixed)
            what = ", ".join(f"{counts[code]} × {code}" for code in sorted(counts))
            out.write(f"{'Would fix' if diff_mode else 'Fixed'} {printable(result.path)}: {what}\n")
        for skip in sorted(result.skipped, key=lambda s: s.finding.sort_key()):
            out.write(f"{location(skip.finding)}: {skip.finding.code} fix not applied automatically: "
                      f"{printable(skip.reason)}\n")
        if result.failure:
            err.write(f"dtype-lint: error: {printable(result.path)}: no fix applied: {printable(result.failure)}\n")
        for error in result.internal_errors:
            err.write(f"dtype-lint: error: {printable(error)}\n")
    if quiet:
        return
    fixed = sum(len(result.fixed) for result in results)
    verb = "Would fix" if diff_mode else "Fixed"
    out.write(f"{verb} {plural(fixed, 'error')} ({len(remaining)} remaining).\n")
    hidden = sum(1 for f in remaining if f.fix is not None and f.fix.safety is Safety.UNSAFE)
    if hidden and not unsafe:
        out.write(f"({plural(hidden, 'more fix')} available with `dtype-lint fix --unsafe-fixes`.)\n")


def _write_diffs(results, out: TextIO) -> None:
    """The patch, exact when it goes to a file or a pipe (``git apply`` takes it); on a terminal,
    with what the terminal would act on escaped, line by line."""
    from dtype_lint.printable import printable

    terminal = out.isatty()
    for result in results:
        if terminal:
            out.write("".join(printable(line) + "\n" for line in result.diff.splitlines()))
        else:
            out.write(result.diff)


class _Discard:
    def write(self, text: str) -> None:
        pass


def run(args: argparse.Namespace) -> int:
    with output_to(args):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from dtype_lint.discover import discover, warn_if_empty
    from dtype_lint.fixer import FixOptions, fix_bytes, fix_files
    from dtype_lint.printable import unicode_path
    from dtype_lint.fixer.files import FileFixResult

    resolver = resolver_from_args(args)
    settings = settings_from_args(args, resolver)
    paths = given_paths(args)
    if paths == ["-"]:
        # Editors: source on stdin, the fixed source (or the diff) on stdout, the report on stderr.
        data = sys.stdin.buffer.read()
        name = unicode_path(args.stdin_filename or "-")
        result = fix_bytes(data, name, settings, FixOptions(args.unsafe_fixes, write=False))
        if args.diff:
            _write_diffs([result], sys.stdout)
        else:
            sys.stdout.buffer.write(result.output if result.changed else data)
        sys.stdout.flush()
        results, out = [result], sys.stderr
    else:
        unreadable: list = []
        files = discover(paths, resolver, unreadable)
        warn_if_empty(files, paths, args.quiet, unreadable)
        options = FixOptions(args.unsafe_fixes, write=not args.diff, original_lines=args.diff)
        results = fix_files(files, settings, options, args.jobs, settings_for=resolver)
        results += [FileFixResult(report.path, remaining=report.findings)
                    for report in unreadable_reports(unreadable, resolver, args.quiet)]
        if args.verbose:
            from dtype_lint.commands.views import describe_configs

            describe_configs(files, resolver, sys.stderr)
        out = sys.stdout
        if args.diff:
            _write_diffs(results, sys.stdout)
            out = sys.stderr  # stdout holds only the patch, so it can be piped to ``git apply``
    _report(results, settings, args.unsafe_fixes, args.diff, out, sys.stderr, args.quiet)
    if any(result.internal_errors for result in results):
        return 2
    changed = any(result.changed for result in results)
    failed = any(result.failure for result in results)
    if args.diff:
        return 1 if changed or failed else 0
    if failed or any(result.remaining for result in results):
        return 1
    return 1 if changed and args.exit_non_zero_on_fix else 0

"""Settings + files -> findings: read, prefilter, parse once, run the rules, filter, sort."""

from __future__ import annotations

import ast
import dataclasses
import gc
import os
import sys
import warnings
from typing import TYPE_CHECKING, Callable

import libcst as cst

from dtype_lint.ast_children import child_nodes
from dtype_lint.config import Settings
from dtype_lint.errors import describe
from dtype_lint.facts import launch_scripts
from dtype_lint.findings import Confidence, Finding, sort_findings
from dtype_lint.memory import REPARSE_FOR_SUMMARY, RETURN_FREED_MEMORY, cyclic_gc_paused, return_freed_memory
from dtype_lint.parsing import parse_in_slices, statement_starts
from dtype_lint.pool import run_pool
from dtype_lint.prefilter import code_words, rules_for, words_of_source
from dtype_lint.rules import all_rules
from dtype_lint.rules.base import Rule
from dtype_lint.source import UndecodableSource, decode
from dtype_lint.suppress import FileSuppressions
from dtype_lint.unused_noqa import CODE as UNUSED_NOQA  # judged here, after every rule ran

if TYPE_CHECKING:
    from dtype_lint.cache import Cache

PARSE_ERROR = "DTL001"


@dataclasses.dataclass
class FileReport:
    path: str
    findings: list[Finding]
    internal_errors: list[str] = dataclasses.field(default_factory=list)
    # The file's lines, kept only when there is something to show.
    lines: list[str] | None = None
    # The project pass's summary of the file (dtype_lint/project/summary.py), when asked for.
    summary: dict | None = None


def _parse_error(path: str, reason: str, line: int, column: int, what: str = "file") -> Finding:
    return Finding(
        code=PARSE_ERROR,
        name="uncheckable-file",
        message=f"Cannot check this {what}: {reason}",
        line=line,
        column=column,
        end_line=line,
        end_column=column,
        confidence=Confidence.HIGH,
        path=path,
    )


def enabled_rules(settings: Settings, path: str) -> list[type[Rule]]:
    return [rule for rule in all_rules()
            if rule.code not in (PARSE_ERROR, UNUSED_NOQA) and settings.is_selected(rule.code, path)]


def might_match(text: str, rules: list[type[Rule]]) -> bool:
    """The prefilter for a whole text: can any of these rules have something to say about it?
    (A text that does not parse can: libcst gets to report it.)"""
    words = words_of_source(text)
    return words is None or bool(rules_for(words, rules))


def _python_parse(text: str, path: str) -> tuple[ast.Module | None, tuple[str, int, int] | None]:
    """CPython's own tree of the file, or why it refuses it (a file Python cannot compile gets DTL001)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=path), None
    except SyntaxError as error:
        return None, (f"syntax error: {error.msg}", error.lineno or 1, (error.offset or 1))
    except (ValueError, RecursionError, MemoryError) as error:
        return None, (f"cannot parse: {type(error).__name__}", 1, 1)


# What an older CPython says of PEP 695 (`type X[T] = ...`, `def f[T](...)`). Other syntax errors
# (nesting limits, huge literals) stay CPython's verdict: libcst would crash on those files.
NEWER_SYNTAX_ERRORS = ("syntax error: invalid syntax", "syntax error: expected '('")


def _newer_than_interpreter(target_version: str | None) -> bool:
    """Whether the code's target Python is newer than the one running the check (no target:
    the code may use any Python's syntax)."""
    if target_version is None:
        return True
    target = tuple(int(part) for part in target_version.split(".")[:2])
    return target > sys.version_info[:2]


def _too_deep_for_libcst(tree: ast.Module, text: str) -> tuple[str, int, int] | None:
    """libcst's native parser overflows the C stack on very deeply nested expressions, which kills
    the process instead of raising: such files are refused before libcst sees them."""
    deep = _too_deep(tree, text)
    if deep is None:
        return None
    reason = f"expression nested too deeply to analyse (depth over {MAX_EXPRESSION_DEPTH})"
    return (reason, deep.lineno, deep.col_offset + 1)


# libcst's Python side hits the recursion limit near depth 300-500 (reported as DTL001 anyway);
# its native parser segfaults somewhere past 1000-3000. Refuse in between.
MAX_EXPRESSION_DEPTH = 800
# An expression shorter than this many characters cannot be nested that deep.
_SHORT_EXPRESSION = 2 * MAX_EXPRESSION_DEPTH


def _too_deep(tree: ast.Module, text: str) -> ast.AST | None:
    """The first long expression nested deeper than MAX_EXPRESSION_DEPTH (cheap: only long ones are walked)."""
    lines: list[str] | None = None
    containers: list[ast.AST] = [tree]
    while containers:
        container = containers.pop()
        for child in child_nodes(container):
            # Statements, and nodes without a position (arguments, withitem, comprehension), hold
            # the expressions to measure.
            if isinstance(child, ast.stmt) or getattr(child, "end_lineno", None) is None:
                containers.append(child)
                continue
            if child.end_lineno == child.lineno:
                length = (child.end_col_offset or 0) - child.col_offset
            else:
                lines = lines if lines is not None else text.split("\n")
                length = sum(len(line) for line in lines[child.lineno - 1: child.end_lineno])
            if length >= _SHORT_EXPRESSION and _depth_exceeds(child, MAX_EXPRESSION_DEPTH):
                return child
    return None


def _depth_exceeds(node: ast.AST, limit: int) -> bool:
    """Whether ``node`` nests deeper than ``limit`` in libcst's tree. CPython keeps ``a and b and c``
    as one node with three values; libcst nests it as ``(a and b) and c``, one level per operator
    (100,000 of them overflowed its native parser)."""
    stack = [(node, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            return True
        if type(current) is ast.BoolOp:
            count = len(current.values)
            # the first two values are as deep as the innermost operation, each later one a level less
            stack.extend((value, depth + count - max(index, 1)) for index, value in enumerate(current.values))
            continue
        stack.extend([(child, depth + 1) for child in child_nodes(current)])
    return False


def check_text(
    text: str, path: str, settings: Settings, *, prefilter: bool = True, use_noqa: bool = True,
    summarize: bool = False, worlds: dict | None = None, only: frozenset[str] | None = None,
) -> FileReport:
    """Check one file's text. Never raises for anything the file contains. ``summarize``: attach
    the project pass's summary of the file; ``worlds``: check its classes under these precision
    worlds (see dtype_lint/project/); ``only``: run just the enabled rules with these codes."""
    # CPython's tree serves both the rules' prefilter and the project summary: parsed once, except
    # for a big file, whose tree is not held through libcst's parse: it is handed to _check_text
    # (which drops it) and parsed again for the summary.
    parsed = _python_parse(text, path)
    summary_tree = parsed[0] if summarize and len(text) < REPARSE_FOR_SUMMARY else None
    handed = [parsed]
    del parsed
    results: dict = {}
    flow_calls: dict = {}
    observe = None
    if summarize:
        from dtype_lint.project.call_sites import flow_arguments

        def record_calls(ctx) -> None:  # the dtypes the file's calls pass, from the flow its rules computed
            try:
                flow_calls.update(flow_arguments(ctx))
            except Exception:  # noqa: BLE001 - the summary then lacks them; the findings stand
                flow_calls.clear()

        observe = record_calls
    with cyclic_gc_paused():
        report = _check_text(text, path, settings, prefilter, use_noqa, worlds, handed, results if summarize else None,
                             observe, only)
        if len(text) >= RETURN_FREED_MEMORY:
            gc.collect()  # the file's tree and facts (held in cycles) go before the summary's tree comes
            return_freed_memory()
        if summarize:
            from dtype_lint.project.summary import summarize_tree

            if len(text) >= REPARSE_FOR_SUMMARY:
                summary_tree = _python_parse(text, path)[0]
            report.summary = summarize_tree(summary_tree, text, flow_calls)
            del summary_tree
            if results and report.summary.get("functions") is not None:
                report.summary = {**report.summary, "results": results}
    return report


def _check_text(text, path, settings, prefilter, use_noqa, worlds, parsed, results=None, observe=None,
                only=None) -> FileReport:
    """``results``: filled with what the file's functions return (project/results.py), when given;
    ``observe``: called with the file's context after its rules ran (project/call_sites.py)."""
    from dtype_lint.context import FileContext
    from dtype_lint.runner import run_rules

    rules = enabled_rules(settings, path)
    if only is not None:
        rules = [rule for rule in rules if rule.code in only]
    want_parse_errors = settings.is_selected(PARSE_ERROR, path)
    findings: list[Finding] = []
    tree, problem = parsed.pop()  # handed over: dropped below, before libcst parses
    python_problem = None
    if tree is None and _newer_than_interpreter(settings.target_version) and problem[0] in NEWER_SYNTAX_ERRORS:
        # Maybe syntax newer than this interpreter (PEP 695 on 3.11): libcst's grammar decides
        # below, and a file it rejects too gets CPython's (clearer) message.
        python_problem, problem = problem, None
    enabled = {rule.code for rule in rules} | ({PARSE_ERROR} if want_parse_errors else set())
    if tree is not None:
        if prefilter:
            rules = rules_for(code_words(tree), rules)
        if not rules:  # nothing can be found: only the suppression comments are left to judge
            suppressions = FileSuppressions(text, text.splitlines(), use_noqa)
            return _finish(path, text, _unused_noqa(suppressions, settings, path, enabled), [], settings, use_noqa)
        problem = _too_deep_for_libcst(tree, text)
    # where libcst may cut a big file (parsing.py); the tree itself, about 70 bytes per byte of
    # source, is not held past this point
    statements = statement_starts(tree) if tree is not None else None
    del tree
    if problem:
        if want_parse_errors:
            findings.append(_parse_error(path, *problem))
        return _finish(path, text, findings, [], settings, use_noqa)
    try:
        module, skipped = parse_in_slices(text, statements)
        if len(text) >= RETURN_FREED_MEMORY:
            return_freed_memory()
        if want_parse_errors:
            findings.extend(
                _parse_error(path, f"a statement of {length // 1000:,} KB is too large to analyse (skipped; the"
                             " rest of the file is checked)", line, 1)
                for line, length in skipped
            )
    except cst.ParserSyntaxError as error:
        if want_parse_errors:
            libcst_problem = (f"syntax error: {error.message}", error.raw_line, error.raw_column + 1)
            findings.append(_parse_error(path, *(python_problem or libcst_problem)))
        return _finish(path, text, findings, [], settings, use_noqa)
    except (RecursionError, MemoryError, ValueError, Exception) as error:  # noqa: BLE001 - native parser errors
        if want_parse_errors:
            findings.append(_parse_error(path, f"cannot parse: {type(error).__name__}", 1, 1))
        return _finish(path, text, findings, [], settings, use_noqa)
    try:
        ctx = FileContext(path, text, module, settings)
        ctx.worlds = worlds
        reported, failed = run_rules(ctx, rules)
        if results is not None and not failed and "flow" in ctx.__dict__:
            from dtype_lint.project.results import function_results

            try:
                results.update(function_results(ctx))
            except Exception:  # noqa: BLE001 - a summary without results: its callers learn nothing
                results.clear()
        if observe is not None:
            observe(ctx)
    except RecursionError:
        failed = {"": "RecursionError"}
    if any(detail.startswith("RecursionError") for detail in failed.values()):
        # A property of the file (libcst nests some constructs, such as thousands of implicitly
        # concatenated strings, far deeper than CPython's parser does), not a bug of one rule.
        if want_parse_errors:
            findings.append(_parse_error(path, "nesting too deep to analyse", 1, 1))
        return _finish(path, text, findings, [], settings, use_noqa)
    errors = [f"{path}: internal error in {code}: {detail}" for code, detail in sorted(failed.items())]
    suppressions = FileSuppressions(text, ctx.lines, use_noqa)
    for finding, statement_line in reported:
        # Asked before the confidence filter: a comment silencing a low-confidence finding is used.
        if suppressions.suppresses(finding.code, finding.line, statement_line):
            continue
        if finding.confidence < settings.min_confidence:
            continue
        findings.append(dataclasses.replace(finding, path=path))
    if not failed:  # a rule that failed may have used a comment
        findings += _unused_noqa(suppressions, settings, path, enabled)
    return _finish(path, text, findings, errors, settings, use_noqa)


def _unused_noqa(suppressions: FileSuppressions, settings: Settings, path: str, enabled: set[str]) -> list[Finding]:
    """DTL002's findings, when it is selected, less those a comment suppresses."""
    if not settings.is_selected(UNUSED_NOQA, path) or "#" not in suppressions.text:
        return []
    from dtype_lint.unused_noqa import unused_directives

    found = unused_directives(suppressions, enabled, [rule.code for rule in all_rules()])
    return [dataclasses.replace(f, path=path) for f in found if not suppressions.suppresses(f.code, f.line, f.line)]


def _finish(path: str, text: str, findings: list[Finding], errors: list[str], settings: Settings,
            use_noqa: bool = True) -> FileReport:
    if findings and "noqa" in text.lower():  # file-level exemptions cover DTL001 too, as flake8's does
        suppressions = FileSuppressions(text, text.splitlines(), use_noqa)
        findings = [finding for finding in findings if not suppressions.exempt(finding.code)]
    return FileReport(
        path=path,
        findings=one_per_line(sort_findings(findings)),
        internal_errors=errors,
        lines=text.splitlines() if findings else None,
    )


def one_per_line(findings: list[Finding]) -> list[Finding]:
    """One finding per defect: a rule that finds the same thing twice on one line (once per
    branch of a ternary, Lightning's ``GradScaler() if precision == "16-mixed" else None``) is
    reported once, at the first column. Two findings with fixes both stay: each fix is its own."""
    kept: list[Finding] = []
    first: dict[tuple, Finding] = {}
    for finding in findings:  # sorted: the first column of a line comes first
        key = (finding.cell, finding.line, finding.code)
        earlier = first.get(key)
        if earlier is not None and (finding.fix is None or earlier.fix is None):
            if finding.fix is not None:  # keep the one that can be fixed
                kept[kept.index(earlier)] = finding
                first[key] = finding
            continue
        first.setdefault(key, finding)
        kept.append(finding)
    return kept


def check_bytes(
    data: bytes, path: str, settings: Settings, *, prefilter: bool = True, summarize: bool = False
) -> FileReport:
    if path.endswith(".ipynb"):  # files and stdin (--stdin-filename x.ipynb) alike
        from dtype_lint.notebook import check_notebook

        return check_notebook(data, path, settings, prefilter=prefilter)
    try:
        source = decode(data)
    except UndecodableSource as problem:
        findings = []
        if settings.is_selected(PARSE_ERROR, path):
            findings.append(_parse_error(path, problem.reason, problem.line, problem.column))
        return FileReport(path=path, findings=findings)
    return check_text(source.text, path, settings, prefilter=prefilter, summarize=summarize)


def check_file(
    display_path: str, fs_path: str, settings: Settings, prefilter: bool = True, cache: "Cache | None" = None,
    summarize: bool = False,
) -> FileReport:
    try:
        with open(fs_path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        finding = _parse_error(display_path, f"cannot read: {error.strerror}", 1, 1)
        return FileReport(path=display_path, findings=[finding])
    if cache is not None:
        cache = cache.for_settings(settings)
    try:
        # the findings also depend on how the project's shell scripts launch the file
        launched = launch_scripts.cache_key(settings, display_path) if cache is not None else ""
        cached = cache.load(display_path, data, launched) if cache is not None else None
        if cached is not None and (cached.summary is not None or not summarize or display_path.endswith(".ipynb")):
            return cached
        report = check_bytes(data, display_path, settings, prefilter=prefilter, summarize=summarize)
        if cache is not None:
            cache.store(display_path, data, report, fs_path, launched)
        return report
    except Exception as error:  # noqa: BLE001 - reported, never a traceback
        return FileReport(
            path=display_path,
            findings=[],
            internal_errors=[f"{display_path}: internal error: {describe(error)}"],
        )


def unreadable_report(problem, settings: Settings) -> FileReport | None:
    """The report of a path discovery could not check (``discover.Unreadable``): DTL001, as ruff
    and flake8 report E902; None when DTL001 is not selected for it (the caller warns)."""
    if not settings.is_selected(PARSE_ERROR, problem.path):
        return None
    what = "directory" if problem.directory else "file"
    return FileReport(path=problem.path, findings=[_parse_error(problem.path, problem.reason, 1, 1, what)])


def _check_file_args(args) -> FileReport:
    return check_file(*args)


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def check_files(
    files: list[tuple[str, str]],
    settings: Settings,
    jobs: int | None = None,
    *,
    prefilter: bool = True,
    cache: "Cache | None" = None,
    settings_for: "Callable[[str], Settings] | None" = None,
    project: bool = False,
    data: list[tuple[str, str]] = (),
) -> list[FileReport]:
    """Reports for ``(display_path, fs_path)`` pairs, in the order given (``cache``: see cache.py).
    ``settings_for``: each file's own settings (hierarchical config); else ``settings`` for all.
    ``project``: analyse the files as one program (dtype_lint/project/): the classes of one file
    are also checked under the precisions other files cast them to, and with the config settings
    they read (``data``: the YAML/TOML/JSON files checked with them, as ``(display, fs_path)``)."""
    jobs = jobs or default_jobs()
    work = [
        (display, fs_path, settings_for(fs_path) if settings_for else settings, prefilter, cache, project)
        for display, fs_path in files
    ]
    reports = run_pool(_check_file_args, work, jobs, _file_crashed)
    if project:
        from dtype_lint.project.recheck import apply_worlds

        try:
            reports = apply_worlds(reports, work, jobs, data)
        except Exception as error:  # noqa: BLE001 - the file-local findings stand; never a traceback
            if reports:
                first = reports[0]
                message = f"internal error in the project pass: {type(error).__name__}: {error}"
                reports = [dataclasses.replace(first, internal_errors=[*first.internal_errors, message]),
                           *reports[1:]]
    if cache is not None:
        cache.finish_run(item[2] for item in work)
    return reports


def _file_crashed(item, reason: str) -> FileReport:
    display = item[0]
    return FileReport(path=display, findings=[], internal_errors=[f"{display}: internal error: {reason}"])

"""DTL002 (unused-noqa, rules/tool.py): the suppression comments of a file that suppressed nothing.

Runs after the file's findings went through ``FileSuppressions``, which recorded the directive
codes they used. A ``DTL`` code is judged only when every rule it names was enabled for the file
(a rule switched off might have used it); a code no rule has is unknown. Codes of other tools and
bare ``# noqa`` are never judged: they may serve flake8 or ruff.
"""

from __future__ import annotations

import io
import tokenize

from dtype_lint.findings import Confidence, Edit, Finding, Fix, Safety
from dtype_lint.suppress import Directive, FileSuppressions

CODE = "DTL002"
NAME = "unused-noqa"


def unused_directives(suppressions: FileSuppressions, enabled: set[str], known: list[str]) -> list[Finding]:
    """DTL002 findings for ``suppressions``' directives; ``enabled``: the codes of the rules that
    ran on the file, ``known``: every rule's code."""
    findings = []
    comments = _comment_columns(suppressions.text)
    for number, line in enumerate(suppressions.lines, start=1):
        if number not in comments:
            continue
        for directive in suppressions.directives(number):
            if directive.start < comments[number]:
                continue  # text in a string that looks like a directive: not a comment
            finding = _judge(directive, line, suppressions.used, enabled, known)
            if finding is not None:
                findings.append(finding)
    return findings


def _comment_columns(text: str) -> dict[int, int]:
    """Each line's comment: where it starts (a file that does not tokenize: none judged)."""
    columns: dict[int, int] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                columns[token.start[0]] = token.start[1]
    except (tokenize.TokenError, SyntaxError):
        return {}
    return columns


def _judge(directive: Directive, line: str, used: set, enabled: set[str], known: list[str]) -> Finding | None:
    if directive.codes is None:
        # A bare ``# dtype-lint: ignore`` is ours alone: unused when nothing used it and every rule ran.
        if directive.kind != "ignore" or (directive.line, "") in used or not set(known) <= enabled | {CODE}:
            return None
        return _finding(directive, line, "Unused `dtype-lint: ignore` directive", kept=None)
    unused, unknown = [], []
    for code in directive.codes:
        if not code.startswith("DTL") or code == CODE or (directive.line, code) in used:
            continue
        named = [rule for rule in known if rule.startswith(code)]
        if not named:
            unknown.append(code)
        elif all(rule in enabled for rule in named):
            unused.append(code)
    if not unused and not unknown:
        return None
    parts = [f"{label}: {', '.join(f'`{c}`' for c in codes)}" for label, codes in (("unused", unused), ("unknown", unknown))
             if codes]
    what = "`noqa`" if directive.kind == "noqa" else "`dtype-lint: ignore`"
    kept = [code for code in directive.codes if code not in unused and code not in unknown]
    return _finding(directive, line, f"Unused {what} directive ({'; '.join(parts)})", kept)


def _finding(directive: Directive, line: str, message: str, kept: list[str] | None) -> Finding:
    text = line.rstrip("\r\n")
    end = directive.start + len(text[directive.start:directive.end].rstrip(", \t"))
    return Finding(
        code=CODE, name=NAME, message=message,
        line=directive.line, column=directive.start + 1, end_line=directive.line, end_column=end + 1,
        confidence=Confidence.HIGH, fix=_fix(directive, text, end, kept),
    )


def _fix(directive: Directive, text: str, end: int, kept: list[str] | None) -> Fix | None:
    if kept:
        spelled = f"# noqa: {', '.join(kept)}" if directive.kind == "noqa" else f"# dtype-lint: ignore[{', '.join(kept)}]"
        edit = Edit(directive.line, directive.start + 1, directive.line, end + 1, spelled)
        return Fix(Safety.UNSAFE, (edit,), "remove the unused codes")
    if text[directive.end:].strip():
        return None  # words after the directive would be left as code
    start = len(text[: directive.start].rstrip())
    edit = Edit(directive.line, start + 1, directive.line, len(text) + 1, "")
    return Fix(Safety.UNSAFE, (edit,), "remove the unused directive")

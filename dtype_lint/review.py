"""Review mode, ``check --diff-base REF``: only findings on lines added or changed since REF.

The analysis still sees whole files (a finding on a new line may depend on an old one); only the
reporting is narrowed, so a review bot comments on exactly what a pull request touched.

- Python files: the new-side line ranges of ``git diff -U0 REF`` (REF against the working tree,
  so uncommitted edits count as changes). Files git does not track yet are new in full.
- Notebooks: the diff of the JSON says little about cells, so the code cells at REF
  (``git cat-file blob REF:path``) and now are compared as programs and the changed lines mapped to
  ``(cell, line)``.
- A finding is kept when any line of its range changed. A file that does not parse (DTL001) is
  reported whenever the file changed at all. Pure deletions mark no line.

git runs through safe_git.py: no hook, filter, diff driver or fsmonitor the repository configures
runs, and nothing is written into it.
"""

from __future__ import annotations

import codecs
import dataclasses
import difflib
import os
import re
import subprocess

from dtype_lint.errors import UsageError
from dtype_lint.safe_git import run_git

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
WHOLE_FILE = None  # every line of the file is new


@dataclasses.dataclass
class Changes:
    """What changed since the base, keyed by real path: line numbers, (cell, line) pairs for
    notebooks, or WHOLE_FILE."""

    ref: str
    toplevel: str
    lines: dict[str, set | None]

    def changed(self, path: str) -> bool:
        return os.path.realpath(path) in self.lines

    def touches(self, path: str, cell: int | None, first: int, last: int) -> bool:
        key = os.path.realpath(path)
        if key not in self.lines:
            return False
        changed = self.lines[key]
        if changed is WHOLE_FILE:
            return True
        span = range(first, max(first, last) + 1)
        if cell is None:
            return any(line in changed for line in span)
        return any((cell, line) in changed for line in span)


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    return run_git(args, cwd)


def _unquote(path: str) -> str:
    """git quotes paths with unusual characters C-style ("a\\tb", octal bytes)."""
    if path.startswith('"') and path.endswith('"'):
        return codecs.escape_decode(path[1:-1].encode("utf-8"))[0].decode("utf-8", errors="replace")
    return path


def parse_diff(diff: str) -> dict[str, set[int]]:
    """``git diff -U0`` output -> new-side path -> the line numbers added or changed."""
    changed: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            target = _unquote(line[4:].rstrip("\t"))
            current = None if target == "/dev/null" else changed.setdefault(target[2:], set())
            continue
        match = HUNK.match(line)
        if match and current is not None:
            start = int(match.group(1))
            count = 1 if match.group(2) is None else int(match.group(2))
            current.update(range(start, start + count))
    return changed


def changed_program_lines(old_text: str, new_text: str) -> set[int]:
    """Lines of ``new_text`` (1-based) that a line diff against ``old_text`` marks added or changed."""
    old_lines = old_text.splitlines()
    new_lines = new_text.splitlines()
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    changed: set[int] = set()
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            changed.update(range(j1 + 1, j2 + 1))
    return changed


def _file_at(ref: str, toplevel: str, relative: str) -> str | None:
    result = _git(["cat-file", "blob", f"{ref}:{relative}"], toplevel)  # no textconv, no filter
    return result.stdout.decode("utf-8", errors="replace") if result.returncode == 0 else None


def _notebook_changes(old_raw: str | None, new_raw: str) -> set | None:
    from dtype_lint.notebook import CELL_MARKER, NotebookError, load_program

    try:
        new = load_program(new_raw)
    except NotebookError:
        return WHOLE_FILE
    try:
        old_text = load_program(old_raw).text if old_raw is not None else ""
    except NotebookError:
        return WHOLE_FILE
    # Cell markers carry the cell number: neutralise them so inserting a cell does not make
    # every later marker look changed.
    neutral = re.compile(re.escape(CELL_MARKER.format("")) + r"\d+")
    lines = changed_program_lines(neutral.sub("#", old_text), neutral.sub("#", new.text))
    return {new.origins[line - 1] for line in lines if new.origins[line - 1] is not None}


def collect_changes(ref: str, start: str = ".", stdin: tuple[str, bytes] | None = None) -> Changes:
    """What changed between ``ref`` and the working tree of the repository holding ``start``.

    ``stdin`` (name, content): source read from stdin stands in for the file of that name."""
    start_dir = start if os.path.isdir(start) else (os.path.dirname(start) or ".")
    top = _git(["rev-parse", "--show-toplevel"], start_dir)
    if top.returncode != 0:
        raise UsageError(f"--diff-base needs a git repository: {top.stderr.decode(errors='replace').strip()}")
    toplevel = top.stdout.decode().strip()
    verified = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], toplevel)
    if verified.returncode != 0:
        raise UsageError(f"--diff-base: unknown revision {ref!r}")
    commit = verified.stdout.decode().strip()
    diff = _git(
        ["-c", "core.quotePath=false", "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv",
         "--ignore-submodules=all", "--find-renames", "--src-prefix=a/", "--dst-prefix=b/", commit, "--"],
        toplevel,
    )
    if diff.returncode != 0:
        raise UsageError(f"--diff-base: git diff failed: {diff.stderr.decode(errors='replace').strip()}")
    lines: dict[str, set | None] = {}
    for relative, numbers in parse_diff(diff.stdout.decode("utf-8", errors="replace")).items():
        lines[os.path.realpath(os.path.join(toplevel, relative))] = numbers
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], toplevel)
    for relative in untracked.stdout.decode("utf-8", errors="replace").split("\0"):
        if relative:
            lines[os.path.realpath(os.path.join(toplevel, relative))] = WHOLE_FILE
    for key in sorted(lines):
        if key.endswith(".ipynb") and lines[key] is not WHOLE_FILE and os.path.isfile(key):
            relative = os.path.relpath(key, os.path.realpath(toplevel))
            with open(key, encoding="utf-8-sig", errors="replace") as handle:
                lines[key] = _notebook_changes(_file_at(commit, toplevel, relative), handle.read())
    if stdin is not None:
        name, data = stdin
        key = os.path.realpath(name)
        relative = os.path.relpath(key, os.path.realpath(toplevel))
        old = None if relative.startswith("..") else _file_at(commit, toplevel, relative)
        new = data.decode("utf-8-sig", errors="replace")
        if name.endswith(".ipynb"):
            lines[key] = _notebook_changes(old, new)
        else:
            lines[key] = WHOLE_FILE if old is None else changed_program_lines(old, new)
        if lines[key] is not WHOLE_FILE and not lines[key] and old is not None and old == new:
            del lines[key]
    return Changes(ref=ref, toplevel=toplevel, lines=lines)


def only_changed(reports, changes: Changes) -> list:
    """The reports with only the findings on changed lines."""
    from dtype_lint.engine import PARSE_ERROR

    narrowed = []
    for report in reports:
        kept = [
            finding
            for finding in report.findings
            if (finding.code == PARSE_ERROR and changes.changed(report.path))
            or changes.touches(report.path, finding.cell, finding.line, finding.end_line)
        ]
        narrowed.append(dataclasses.replace(report, findings=kept))
    return narrowed

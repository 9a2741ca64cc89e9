"""Files in and out: bytes decoded and re-encoded exactly (encoding, BOM, line endings), atomic
writes that keep permissions, unified diffs, and the process pool that spreads files like
``check`` does."""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import stat
import tempfile
from typing import Callable

from dtype_lint.config import Settings
from dtype_lint.findings import Finding, sort_findings
from dtype_lint.fixer.core import SkippedFix, fix_text
from dtype_lint.source import UndecodableSource, decode


@dataclasses.dataclass(frozen=True)
class FixOptions:
    unsafe: bool = False  # also apply fixes that change numerics or behaviour
    write: bool = True  # False for --diff and stdin: compute, never touch the file
    # --diff: nothing is written, so what remains is reported where it is in the file as it is.
    original_lines: bool = False


@dataclasses.dataclass
class FileFixResult:
    path: str
    fixed: list[Finding] = dataclasses.field(default_factory=list)
    remaining: list[Finding] = dataclasses.field(default_factory=list)
    skipped: list[SkippedFix] = dataclasses.field(default_factory=list)
    failure: str | None = None  # why the file was left untouched
    internal_errors: list[str] = dataclasses.field(default_factory=list)
    output: bytes | None = None  # the fixed bytes, when they differ from the input
    diff: str = ""
    written: bool = False

    @property
    def changed(self) -> bool:
        return self.output is not None


def unified_diff(before: str, after: str, path: str) -> str:
    # Relative paths get git's a/ b/ prefixes (``git apply`` takes the patch); absolute ones stay.
    old, new = (path, path) if os.path.isabs(path) else (f"a/{path}", f"b/{path}")
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), old, new)
    # As diff(1) does, say so when a line has no newline at its end (else lines run together).
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


class FileChanged(OSError):
    """The file changed on disk between reading it and writing the fix (an editor saved it), or
    ``path`` now names another file (it was swapped for a symlink)."""


class WriteRefused(OSError):
    """A file ``fix`` leaves alone: read-only, or hard-linked (a new file would split its links)."""


def _signature(info: os.stat_result) -> tuple[int, int, int, int]:
    """Which file, and which version of it: a write goes only to the very file that was read."""
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)


def _refusal(info: os.stat_result, path: str) -> str | None:
    """Why a file must not be rewritten, or None. Decided by the mode bits, not by ``os.access``
    alone: root may write a 0444 file, and its owner said it is not to be changed."""
    mode = f"mode {stat.S_IMODE(info.st_mode):04o}"
    if not info.st_mode & 0o222:
        return f"the file is read-only ({mode})"
    if not os.access(path, os.W_OK):
        return f"the file is not writable by this user ({mode})"
    if info.st_nlink > 1:
        return f"the file has {info.st_nlink} hard links (a fixed copy would no longer be shared by them)"
    return None


def atomic_write(path: str, data: bytes, read_as: tuple[int, int, int, int] | None = None) -> None:
    """Replace ``path``'s content with ``data`` in one rename: a reader (or a crash) sees the old
    file or the new one, never half of it. Mode and, where allowed, owner are kept; a symlink
    stays a symlink (its target is replaced: discovery only hands over links inside the tree).
    ``read_as``: the signature of the file the fix was computed from; a path that no longer names
    that file, unchanged, is not written. Raises WriteRefused for a read-only or hard-linked file."""
    real = os.path.realpath(path)
    info = os.stat(real)
    if read_as is not None and _signature(info) != read_as:
        raise FileChanged(f"{path} changed while it was being fixed")
    refused = _refusal(info, real)
    if refused:
        raise WriteRefused(refused)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(real), prefix=f".{os.path.basename(real)}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
        with contextlib.suppress(OSError, AttributeError):  # AttributeError: no getuid (Windows)
            if (info.st_uid, info.st_gid) != (os.getuid(), os.getgid()):
                os.chown(temporary, info.st_uid, info.st_gid)
        if read_as is not None and _signature(os.stat(real)) != read_as:
            raise FileChanged(f"{path} changed while it was being fixed")
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def fix_bytes(data: bytes, path: str, settings: Settings, options: FixOptions) -> FileFixResult:
    """Fix one file's bytes in memory; ``output`` holds the new bytes when anything changed."""
    from dtype_lint.engine import check_bytes

    if path.endswith(".ipynb"):  # fixed as one program, cells written back into the JSON
        from dtype_lint.notebook import fix_notebook

        return fix_notebook(data, path, settings, options)
    try:
        source = decode(data)
    except UndecodableSource:
        return FileFixResult(path, remaining=check_bytes(data, path, settings).findings)
    outcome = fix_text(source.text, path, settings, unsafe=options.unsafe)
    result = FileFixResult(
        path,
        fixed=outcome.fixed,
        remaining=outcome.remaining,
        skipped=outcome.skipped,
        failure=outcome.failure,
        internal_errors=list(outcome.internal_errors),
    )
    if not outcome.changed:
        return result
    try:
        output = source.encode(outcome.text)
    except UnicodeEncodeError as error:
        return _untouched(result, source.text, path, settings, f"the fixed code cannot be written as {source.encoding}: {error.reason}")
    if decode(output).text != outcome.text:  # the re-encoding must give back exactly the fixed text
        return _untouched(result, source.text, path, settings, "the fixed code does not survive re-encoding")
    result.output = output
    result.diff = unified_diff(source.text, outcome.text, path)
    if options.original_lines:
        result.remaining = as_found(outcome.remaining, outcome.text, source.text, path, settings)
    return result


def as_found(remaining: list[Finding], fixed_text: str, original: str, path: str, settings: Settings) -> list[Finding]:
    """The findings left after fixing, at their places in the unfixed text: the original finding
    (its lines, columns and message) where one of the same code was on the line the fixed line
    came from; else the new finding moved to that line."""
    from dtype_lint.engine import check_text

    old_line = _line_map(fixed_text, original)
    found: dict[tuple[str, int], list[Finding]] = {}
    for finding in check_text(original, path, settings).findings:
        found.setdefault((finding.code, finding.line), []).append(finding)
    result = []
    for finding in remaining:
        line = old_line.get(finding.line, finding.line)
        candidates = found.get((finding.code, line))
        if candidates:
            result.append(candidates.pop(0))
        else:
            shift = line - finding.line
            result.append(dataclasses.replace(finding, line=line, end_line=finding.end_line + shift))
    return sort_findings(result)


def _line_map(new: str, old: str) -> dict[int, int]:
    """1-based line in ``new`` -> the line of ``old`` it came from (a changed block maps onto
    the old block line by line, its surplus onto the block's last line)."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    mapping: dict[int, int] = {}
    for _tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        for offset in range(new_end - new_start):
            old_index = min(old_start + offset, max(old_start, old_end - 1))
            mapping[new_start + offset + 1] = old_index + 1
    return mapping


def _untouched(result: FileFixResult, text: str, path: str, settings: Settings, reason: str) -> FileFixResult:
    from dtype_lint.engine import check_text

    return FileFixResult(path, remaining=check_text(text, path, settings).findings, failure=reason, internal_errors=result.internal_errors)


def fix_file(display_path: str, fs_path: str, settings: Settings, options: FixOptions) -> FileFixResult:
    """Fix one file on disk. Never raises for anything the file holds; writes only a complete,
    verified result."""
    from dtype_lint.engine import check_bytes, check_file

    try:
        with open(fs_path, "rb") as stream:
            read_as = _signature(os.fstat(stream.fileno()))
            data = stream.read()
    except OSError:
        report = check_file(display_path, fs_path, settings)
        return FileFixResult(display_path, remaining=report.findings, internal_errors=report.internal_errors)
    try:
        result = fix_bytes(data, display_path, settings, options)
    except Exception as error:  # noqa: BLE001 - reported, never a traceback, nothing written
        return FileFixResult(display_path, internal_errors=[f"{display_path}: internal error while fixing: {type(error).__name__}: {error}"])
    if result.changed and options.write:
        try:
            atomic_write(fs_path, result.output, read_as)
            result.written = True
        except OSError as error:
            report = check_bytes(data, display_path, settings)
            return FileFixResult(
                display_path,
                remaining=report.findings,
                failure=str(error) if isinstance(error, (FileChanged, WriteRefused))
            else f"cannot write the fixed file: {error.strerror or error}",
                internal_errors=result.internal_errors,
            )
    return result


def _fix_file_args(args) -> FileFixResult:
    return fix_file(*args)


def fix_files(
    files: list[tuple[str, str]], settings: Settings, options: FixOptions, jobs: int | None = None,
    settings_for: "Callable[[str], Settings] | None" = None,
) -> list[FileFixResult]:
    """Results for ``(display_path, fs_path)`` pairs, in the order given; files are independent,
    so they spread over processes exactly as ``engine.check_files`` does. ``settings_for``: each
    file's own settings (hierarchical config)."""
    from dtype_lint.engine import default_jobs
    from dtype_lint.pool import run_pool

    jobs = jobs or default_jobs()
    work = [(display, fs_path, settings_for(fs_path) if settings_for else settings, options) for display, fs_path in files]
    return run_pool(_fix_file_args, work, jobs, _fix_crashed)


def _fix_crashed(item, reason: str) -> FileFixResult:
    display = item[0]
    return FileFixResult(display, internal_errors=[f"{display}: internal error: {reason}"])


def remaining_findings(results: list[FileFixResult]) -> list[Finding]:
    return sort_findings([finding for result in results for finding in result.remaining])

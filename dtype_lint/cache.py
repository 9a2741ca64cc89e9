"""The per-file result cache in ``.dtype_lint_cache/``.

An entry holds one file's findings. It is valid only for the exact bytes it was computed from,
this analyzer (its version and the hash of its own source, so an edited rule never serves stale
results), the effective settings (``Settings.cache_key()``) and the path the findings are
reported under (per-file ignores depend on it). Entries are JSON, never pickle: a cache directory
that came with a checkout must not be able to run code. How they are stored (compressed, one
folder per analyzer and settings) and pruned is cache_store.py's business.

Concurrent runs are safe: each entry is written to a temporary file and moved into place with
``os.replace``, so a reader sees a whole entry or none. An entry that cannot be read or does not
match is ignored, and the fresh result overwrites it.

A cache directory may come with a checkout, so an entry is never believed (docs/security.md):
it is read only if it is a regular file (not a symlink, FIFO or device) of at most
``MAX_ENTRY_BYTES``, without blocking; each finding must be one this analyzer could have made of
these bytes (the key's path, a known code with its name, a range inside the file, every field of
its type), the source lines shown with the findings are taken from the file itself, and a summary
must have the shape the project pass reads. Anything else is a miss. Nothing is written through a
symlink: a project cache directory that is one is not used (``open_cache``), and an analyzer or
settings folder that is one is not written to.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

from dtype_lint import __version__, cache_store
from dtype_lint.config import Settings
from dtype_lint.findings import Confidence, Edit, Finding, Fix, Safety
from dtype_lint.tree_files import read_regular_file

DIRECTORY_NAME = ".dtype_lint_cache"
# Where to put the cache instead of next to the config (tests and benchmarks use it).
DIRECTORY_ENV = "DTYPE_LINT_CACHE_DIR"
FORMAT = 6  # 6: compressed, in folders per analyzer and settings (cache_store.py); 5: no source lines
# An entry holds findings and a summary, a fraction of its file's size; a bigger one is no entry
# (compressed on disk, and again once inflated: cache_store.MAX_ENTRY_BYTES).
MAX_ENTRY_BYTES = 64 << 20
PACKAGE_DIR = Path(__file__).resolve().parent

_fingerprint: str | None = None


def analyzer_fingerprint() -> str:
    """Version, rule set and a hash of the analyzer's own source (computed once per process)."""
    global _fingerprint
    if _fingerprint is None:
        from dtype_lint.rules import all_rules

        digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0".encode())
        digest.update(",".join(rule.code for rule in all_rules()).encode())
        for source in sorted(PACKAGE_DIR.rglob("*.py")):
            relative = source.relative_to(PACKAGE_DIR).as_posix()
            if relative.startswith("runtime/"):
                continue  # the runtime companion does not affect static findings
            digest.update(b"\0" + relative.encode() + b"\0")
            try:
                digest.update(source.read_bytes())
            except OSError:
                digest.update(b"<unreadable>")
        _fingerprint = digest.hexdigest()
    return _fingerprint


def cache_directory(settings: Settings) -> Path:
    """``$DTYPE_LINT_CACHE_DIR``, else next to the config file, else in the working directory."""
    configured = os.environ.get(DIRECTORY_ENV)
    if configured:
        return Path(configured)
    if settings.config_path:
        return Path(settings.root) / DIRECTORY_NAME
    return Path.cwd() / DIRECTORY_NAME


def open_cache(settings: Settings) -> tuple["Cache | None", str | None]:
    """The run's cache, or None and a warning: a project cache directory that is a symlink may
    point anywhere (a checkout can hold one), so it is neither read nor written. The directory
    ``$DTYPE_LINT_CACHE_DIR`` names is the user's own choice and is used as it is."""
    directory = cache_directory(settings)
    if not os.environ.get(DIRECTORY_ENV) and os.path.islink(directory):
        return None, f"{directory} is a symbolic link: the cache is not used (remove the link to use one)"
    return Cache(directory, settings), None


class Cache:
    """Entries for one analyzer and one set of settings. Holds only strings: safe to pickle."""

    def __init__(self, directory: str | os.PathLike, settings: Settings, started: float | None = None) -> None:
        self.directory = str(directory)
        self.settings_key = settings.cache_key()
        self.namespace = hashlib.sha256(f"{analyzer_fingerprint()}\0{self.settings_key}".encode()).hexdigest()
        self.generation = analyzer_fingerprint()[:16]
        self.settings_folder = hashlib.sha256(self.settings_key.encode()).hexdigest()[:16]
        self.started = cache_store.new_run() if started is None else started  # a sibling shares its run
        self._siblings: dict[str, Cache] = {self.settings_key: self}
        self._by_settings: dict[Settings, Cache] = {settings: self}

    def for_settings(self, settings: Settings) -> "Cache":
        """The same directory, keyed for other settings (a file under another config)."""
        known = self._by_settings.get(settings)  # a dict lookup: cache_key() costs ~50 us
        if known is not None:
            return known
        key = settings.cache_key()
        sibling = self._siblings.get(key)
        if sibling is None:
            sibling = self._siblings[key] = Cache(self.directory, settings, self.started)
        self._by_settings[settings] = sibling
        return sibling

    def _entry_path(self, display_path: str) -> str:
        name = hashlib.sha256(display_path.encode()).hexdigest()
        return cache_store.entry_path(self.directory, self.generation, self.settings_folder, name)

    def _folders(self) -> tuple[str, str]:
        generation = os.path.join(self.directory, self.generation)
        return generation, os.path.join(generation, self.settings_folder)

    def _read(self, path: str, fields: tuple[str, ...]) -> dict | None:
        entry = _read_entry(path, fields)
        if entry is not None:
            cache_store.mark_used(*self._folders())
        return entry

    def finish_run(self, settings_used: Iterable[Settings] = ()) -> None:
        """After a run (the main process): prune what this analyzer no longer reads, keeping the
        folders of ``settings_used`` (the run's files may have been checked in worker processes,
        whose siblings this process never saw)."""
        for settings in settings_used:
            self.for_settings(settings)
        in_use = [sibling.settings_folder for sibling in self._siblings.values()]
        cache_store.prune(self.directory, self.generation, in_use)

    def _key(self, display_path: str, data: bytes, outside: str = "") -> str:
        content = hashlib.sha256(data).hexdigest()
        if outside:  # what other files of the project say of this one (its launch scripts)
            content += ":" + hashlib.sha256(outside.encode()).hexdigest()
        return f"{self.namespace}:{content}:{display_path}"

    def load(self, display_path: str, data: bytes, outside: str = ""):
        """The cached FileReport for these bytes, or None (missing, stale, corrupt or implausible
        entry). ``outside``: what else the report depends on, as text (launch_scripts.cache_key)."""
        from dtype_lint.engine import FileReport

        entry = self._read(self._entry_path(display_path), ("key", "file", "findings", "summary"))
        if entry is None or entry["key"] != self._key(display_path, data, outside):
            return None
        shape = _FileShape(display_path, data)
        findings = _findings_from_json(entry["findings"], shape)
        summary = entry["summary"]
        if findings is None or (summary is not None and not _plausible_summary(summary)):
            return None
        if summary is not None and summary["format"] != _summary_format():
            summary = None  # an older summary lacks what the project pass now reads: rebuilt
        lines = shape.lines if findings else None
        return FileReport(path=display_path, findings=findings, internal_errors=[], lines=lines, summary=summary)

    def store(self, display_path: str, data: bytes, report, source: str | None = None, outside: str = "") -> None:
        """Record a report; reports with internal errors are not cached (they are retried).
        ``source``: the file's path on disk (the display path when not given)."""
        if report.internal_errors:
            return
        entry = {
            "key": self._key(display_path, data, outside),
            "file": os.path.abspath(source or display_path),  # gone: the entry is pruned (cache_store)
            "findings": [_finding_to_json(finding) for finding in report.findings],
            "summary": report.summary,
        }
        self._write(self._entry_path(display_path), entry)

    # -- the project pass's entries: one file's findings under its precision worlds ----------------
    def _world_path(self, display_path: str, world_key: str) -> str:
        # One entry per file (its key says which worlds): new worlds replace the old ones'.
        return self._entry_path(f"{display_path}\0worlds")

    def load_world(self, display_path: str, data: bytes, world_key: str) -> list[Finding] | None:
        """The findings cached for these bytes checked under the worlds ``world_key`` names."""
        entry = self._read(self._world_path(display_path, world_key), ("key", "file", "findings"))
        if entry is None or entry["key"] != self._key(display_path, data) + ":" + world_key:
            return None
        return _findings_from_json(entry["findings"], _FileShape(display_path, data))

    def store_world(self, display_path: str, data: bytes, world_key: str, findings: list[Finding],
                    source: str | None = None) -> None:
        entry = {
            "key": self._key(display_path, data) + ":" + world_key,
            "file": os.path.abspath(source or display_path),
            "findings": [_finding_to_json(finding) for finding in findings],
        }
        self._write(self._world_path(display_path, world_key), entry)

    def _write(self, target: str, entry: dict) -> None:
        try:
            _prepare(self.directory)
            generation, settings_folder = self._folders()
            for folder in (generation, settings_folder):
                if not os.path.isdir(folder):
                    os.mkdir(folder)
                if not cache_store.real_folder(folder):
                    return  # a symlink (or anything but our own folder): never written through
            cache_store.mark_used(generation, settings_folder)
            handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-")
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(cache_store.encode(entry))
                os.replace(temporary, target)
            except BaseException:
                _remove_quietly(temporary)
                raise
        except OSError:
            pass  # a read-only or full disk costs speed, never a result


def _prepare(directory: str) -> None:
    """Create the directory with a .gitignore and CACHEDIR.TAG, so it is never committed or backed up."""
    marker = os.path.join(directory, ".gitignore")
    if os.path.exists(marker):
        return
    os.makedirs(directory, exist_ok=True)
    for name, content in (
        ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# dtype-lint cache\n"),
        (".gitignore", "# Created by dtype-lint automatically.\n*\n"),
    ):
        path = os.path.join(directory, name)
        try:
            with open(path, "x", encoding="utf-8") as out:
                out.write(content)
        except FileExistsError:
            pass


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# -- (de)serialising findings, fixes included --------------------------------------------------
def _finding_to_json(finding: Finding) -> dict[str, Any]:
    fix = finding.fix
    return {
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "range": [finding.line, finding.column, finding.end_line, finding.end_column],
        "confidence": int(finding.confidence),
        "path": finding.path,
        "cell": finding.cell,
        "file_line": finding.file_line,
        "fix": None if fix is None else {
            "safety": fix.safety.value,
            "description": fix.description,
            "edits": [[e.line, e.column, e.end_line, e.end_column, e.content] for e in fix.edits],
        },
    }


# -- reading entries: bounded, never blocking, never believed --------------------------------------
class _Implausible(Exception):
    """An entry field this analyzer cannot have written for this file."""


def _read_entry(path: str, fields: tuple[str, ...]) -> dict | None:
    """The JSON object stored at ``path`` with exactly ``fields``, or None."""
    data = read_regular_file(path, MAX_ENTRY_BYTES, follow_symlinks=False)
    if data is None:
        return None
    try:
        entry = cache_store.decode(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or set(entry) != set(fields) or not isinstance(entry["key"], str):
        return None
    return entry


class _FileShape:
    """What the file an entry describes allows: how many lines a range may name, and the lines a
    report with findings shows (taken from the file, never from the entry). Computed when a
    finding first asks: an entry without findings costs no decoding."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.notebook = path.endswith(".ipynb")
        self.file_lines = data.count(b"\n") + 1
        self._data = data
        self._lines: list[str] | None = None
        self._line_count: int | None = None

    @property
    def lines(self) -> list[str] | None:
        self._read()
        return self._lines

    @property
    def line_count(self) -> int:
        self._read()
        return self._line_count

    def _read(self) -> None:
        if self._line_count is not None:
            return
        self._line_count = self.file_lines
        if self.notebook:
            from dtype_lint.notebook import NotebookError, load_program

            try:
                self._lines = load_program(self._data.decode("utf-8-sig")).text.split("\n")[:-1]
            except (ValueError, NotebookError, RecursionError):  # ValueError: UnicodeDecodeError too
                return
        else:
            from dtype_lint.source import UndecodableSource, decode

            try:
                self._lines = decode(self._data).text.splitlines()
            except UndecodableSource:
                return
        self._line_count = max(self.file_lines, len(self._lines))

    def check_range(self, line: Any, column: Any, end_line: Any, end_column: Any) -> None:
        if not all(type(value) is int for value in (line, column, end_line, end_column)):
            raise _Implausible
        # A range may end just past the last line (an error at the end of the file).
        if not (1 <= line <= end_line <= self.line_count + 1 and column >= 1 and end_column >= 1):
            raise _Implausible


_FINDING_FIELDS = frozenset({"code", "name", "message", "range", "confidence", "path", "cell", "file_line", "fix"})
_CONFIDENCES = frozenset(int(level) for level in Confidence)
_SAFETIES = frozenset(safety.value for safety in Safety)
_rule_names: dict[str, str] = {}


def _known_rules() -> dict[str, str]:
    if not _rule_names:
        from dtype_lint.rules import all_rules

        _rule_names.update((rule.code, rule.name) for rule in all_rules())
    return _rule_names


def _findings_from_json(items: Any, shape: _FileShape) -> list[Finding] | None:
    """The findings of an entry, or None when any of them is not one this file can have."""
    if not isinstance(items, list):
        return None
    try:
        return [_finding_from_json(item, shape) for item in items]
    except (_Implausible, ValueError, RecursionError):
        return None


def _finding_from_json(data: Any, shape: _FileShape) -> Finding:
    if not isinstance(data, dict) or set(data) != _FINDING_FIELDS:
        raise _Implausible
    code, name, message, cell, file_line = (data[key] for key in ("code", "name", "message", "cell", "file_line"))
    if not all(isinstance(text, str) for text in (code, name, message)) or _known_rules().get(code) != name:
        raise _Implausible
    if data["path"] != shape.path or type(data["confidence"]) is not int or data["confidence"] not in _CONFIDENCES:
        raise _Implausible
    if not isinstance(data["range"], list) or len(data["range"]) != 4:
        raise _Implausible
    shape.check_range(*data["range"])
    for number in (cell, file_line):
        if number is not None and (not shape.notebook or type(number) is not int or number < 1):
            raise _Implausible  # cells are a notebook's
    if file_line is not None and file_line > shape.file_lines + 1:
        raise _Implausible
    line, column, end_line, end_column = data["range"]
    return Finding(
        code=code, name=name, message=message, line=line, column=column, end_line=end_line, end_column=end_column,
        confidence=Confidence(data["confidence"]), fix=_fix_from_json(data["fix"], shape), path=shape.path,
        cell=cell, file_line=file_line,
    )


def _fix_from_json(data: Any, shape: _FileShape) -> Fix | None:
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != {"safety", "description", "edits"}:
        raise _Implausible
    if data["safety"] not in _SAFETIES or not isinstance(data["description"], str) or not isinstance(data["edits"], list):
        raise _Implausible
    edits = []
    for edit in data["edits"]:
        if not isinstance(edit, list) or len(edit) != 5 or not isinstance(edit[4], str):
            raise _Implausible
        shape.check_range(*edit[:4])
        edits.append(Edit(*edit))
    return Fix(safety=Safety(data["safety"]), edits=tuple(edits), description=data["description"])


def _plausible_summary(summary: Any) -> bool:
    """A summary with the project pass's fields, each of the type it reads (an older format is
    replaced anyway, so only its ``format`` must be readable)."""
    from dtype_lint.project.summary import EMPTY

    if not isinstance(summary, dict) or type(summary.get("format")) is not int:
        return False
    if summary["format"] != _summary_format():
        return True
    if not set(EMPTY) <= set(summary) <= set(EMPTY) | {"results"}:
        return False
    if "results" in summary and not isinstance(summary["results"], dict):
        return False
    return all(type(summary[key]) is type(value) for key, value in EMPTY.items())


def _summary_format() -> int:
    from dtype_lint.project.summary import FORMAT as SUMMARY_FORMAT

    return SUMMARY_FORMAT

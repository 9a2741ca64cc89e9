"""The per-file result cache in ``.dtype_lint_cache/``.

An entry holds one file's findings. It is valid only for the exact bytes it was computed from,
this analyzer (its version and the hash of its own source, so an edited rule never serves stale
results), the effective settings (``Settings.cache_key()``) and the path the findings are
reported under (per-file ignores depend on it). Entries are JSON, never pickle: a cache directory
that came with a checkout must not be able to run code.

Concurrent runs are safe: each entry is written to a temporary file and moved into place with
``os.replace``, so a reader sees a whole entry or none. An entry that cannot be read or does not
match is ignored, and the fresh result overwrites it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from dtype_lint import __version__
from dtype_lint.config import Settings
from dtype_lint.findings import Confidence, Edit, Finding, Fix, Safety

DIRECTORY_NAME = ".dtype_lint_cache"
# Where to put the cache instead of next to the config (tests and benchmarks use it).
DIRECTORY_ENV = "DTYPE_LINT_CACHE_DIR"
FORMAT = 4  # 4: summaries hold autocast calls, framework autocast and runners
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


class Cache:
    """Entries for one analyzer and one set of settings. Holds only strings: safe to pickle."""

    def __init__(self, directory: str | os.PathLike, settings: Settings) -> None:
        self.directory = str(directory)
        self.settings_key = settings.cache_key()
        self.namespace = hashlib.sha256(f"{analyzer_fingerprint()}\0{self.settings_key}".encode()).hexdigest()
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
            sibling = self._siblings[key] = Cache(self.directory, settings)
        self._by_settings[settings] = sibling
        return sibling

    def _entry_path(self, display_path: str) -> str:
        name = hashlib.sha256(f"{self.namespace}\0{display_path}".encode()).hexdigest()
        return os.path.join(self.directory, name[:2], name[2:] + ".json")

    def _key(self, display_path: str, data: bytes) -> str:
        content = hashlib.sha256(data).hexdigest()
        return f"{self.namespace}:{content}:{display_path}"

    def load(self, display_path: str, data: bytes):
        """The cached FileReport for these bytes, or None (missing, stale or corrupt entry)."""
        from dtype_lint.engine import FileReport

        try:
            with open(self._entry_path(display_path), encoding="utf-8") as handle:
                entry = json.load(handle)
            if entry["key"] != self._key(display_path, data):
                return None
            findings = [_finding_from_json(item) for item in entry["findings"]]
            lines = entry["lines"]
            if lines is not None and not (isinstance(lines, list) and all(isinstance(x, str) for x in lines)):
                return None
            summary = entry.get("summary")
            if summary is not None and not isinstance(summary, dict):
                return None
            if summary is not None and summary.get("format") != _summary_format():
                summary = None  # an older summary lacks what the project pass now reads: rebuilt

        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return FileReport(path=display_path, findings=findings, internal_errors=[], lines=lines, summary=summary)

    def store(self, display_path: str, data: bytes, report) -> None:
        """Record a report; reports with internal errors are not cached (they are retried)."""
        if report.internal_errors:
            return
        entry = {
            "key": self._key(display_path, data),
            "findings": [_finding_to_json(finding) for finding in report.findings],
            "lines": report.lines,
            "summary": report.summary,
        }
        self._write(self._entry_path(display_path), entry)

    # -- the project pass's entries: one file's findings under its precision worlds ----------------
    def _world_path(self, display_path: str, world_key: str) -> str:
        return self._entry_path(f"{display_path}\0worlds\0{world_key}")

    def load_world(self, display_path: str, data: bytes, world_key: str) -> list[Finding] | None:
        """The findings cached for these bytes checked under the worlds ``world_key`` names."""
        try:
            with open(self._world_path(display_path, world_key), encoding="utf-8") as handle:
                entry = json.load(handle)
            if entry["key"] != self._key(display_path, data) + ":" + world_key:
                return None
            return [_finding_from_json(item) for item in entry["findings"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def store_world(self, display_path: str, data: bytes, world_key: str, findings: list[Finding]) -> None:
        entry = {
            "key": self._key(display_path, data) + ":" + world_key,
            "findings": [_finding_to_json(finding) for finding in findings],
        }
        self._write(self._world_path(display_path, world_key), entry)

    def _write(self, target: str, entry: dict) -> None:
        try:
            _prepare(self.directory)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(entry, out, separators=(",", ":"))
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


def _finding_from_json(data: dict[str, Any]) -> Finding:
    fix_data = data["fix"]
    fix = None
    if fix_data is not None:
        fix = Fix(
            safety=Safety(fix_data["safety"]),
            edits=tuple(Edit(*edit) for edit in fix_data["edits"]),
            description=fix_data["description"],
        )
    line, column, end_line, end_column = data["range"]
    return Finding(
        code=data["code"],
        name=data["name"],
        message=data["message"],
        line=line,
        column=column,
        end_line=end_line,
        end_column=end_column,
        confidence=Confidence(data["confidence"]),
        fix=fix,
        path=data["path"],
        cell=data["cell"],
        file_line=data["file_line"],
    )


def _summary_format() -> int:
    from dtype_lint.project.summary import FORMAT as SUMMARY_FORMAT

    return SUMMARY_FORMAT

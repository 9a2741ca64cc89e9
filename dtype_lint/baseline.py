"""A baseline: today's findings recorded in a file, so that only new ones are reported.

Entries are keyed by the file's path (relative to the baseline's directory, so the run may start
anywhere) and the finding's line-independent fingerprint (``dtype_lint.fingerprint``). The file is
JSON, sorted and written the same way whatever the hash seed, so rewriting an unchanged project
changes nothing. An entry of a checked file that no longer matches a finding is stale (fixed, or
changed beyond recognition); stale entries are counted, not reported.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from pathlib import Path

from dtype_lint.errors import UsageError
from dtype_lint.fingerprint import report_fingerprints
from dtype_lint.tree_files import link_out_of, read_regular_file

FORMAT_VERSION = 1
MAX_BASELINE_BYTES = 256 << 20


@dataclasses.dataclass
class BaselineResult:
    reports: list  # the reports less the findings the baseline holds
    hidden: int  # findings left out because the baseline holds them
    stale: int  # entries of checked files (and selected codes) that match no finding


def _key_path(path: str, directory: str) -> str:
    if path in ("", "-"):
        return "-"
    relative = os.path.relpath(os.path.abspath(path), directory)
    return Path(relative).as_posix()


def _entries(reports, directory: str) -> list[dict[str, str]]:
    entries = []
    for report in reports:
        path = _key_path(report.path, directory)
        for finding, fingerprint in zip(report.findings, report_fingerprints(report)):
            entries.append({
                "path": path,
                "code": finding.code,
                "scope": fingerprint.scope,
                "statement": fingerprint.statement[:200],  # for readers; the fingerprint holds it all
                "fingerprint": fingerprint.digest,
            })
    entries.sort(key=lambda entry: (entry["path"], entry["code"], entry["scope"], entry["statement"], entry["fingerprint"]))
    return entries


def write_baseline(file: str, reports) -> int:
    """Record every finding of ``reports`` in ``file`` (replacing it); the number of entries."""
    directory = os.path.dirname(os.path.abspath(file))
    entries = _entries(reports, directory)
    text = json.dumps({"version": FORMAT_VERSION, "tool": "dtype-lint", "entries": entries}, indent=2, sort_keys=True, ensure_ascii=False)
    # A baseline file a checkout brought may be a symlink to anywhere: not written through
    # unless it points inside the working directory (docs/security.md).
    if link_out_of(file):
        raise UsageError(f"cannot write baseline {file}: a symbolic link to a file outside the working directory")
    try:
        with open(file, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text + "\n")
    except OSError as error:
        raise UsageError(f"cannot write baseline {file}: {error.strerror}") from None
    return len(entries)


def load_baseline(file: str) -> Counter:
    """The baseline's ``(path, code, fingerprint)`` entries, counted."""
    if not os.path.exists(file):
        raise UsageError(f"baseline file not found: {file} (create it with --write-baseline)")
    raw = read_regular_file(file, MAX_BASELINE_BYTES)  # the config may name a FIFO: never blocks
    if raw is None:
        limit = MAX_BASELINE_BYTES >> 20
        raise UsageError(f"cannot read baseline {file}: not a readable regular file of at most {limit} MiB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as error:  # bad JSON or UTF-8, a 5,000-digit number, deep nesting
        reason = "nested too deeply" if isinstance(error, RecursionError) else " ".join(str(error).split())[:200]
        raise UsageError(f"{file}: not a dtype-lint baseline (invalid JSON: {reason})") from None
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        raise UsageError(f"{file}: not a dtype-lint baseline of version {FORMAT_VERSION}")
    entries = data.get("entries")
    if not isinstance(entries, list) or not all(
        isinstance(entry, dict) and all(isinstance(entry.get(key), str) for key in ("path", "code", "fingerprint"))
        for entry in entries
    ):
        raise UsageError(f"{file}: malformed baseline entries")
    return Counter((entry["path"], entry["code"], entry["fingerprint"]) for entry in entries)


def apply_baseline(reports, file: str, settings) -> BaselineResult:
    """Leave out the findings ``file`` records; count its stale entries among the checked files."""
    remaining = load_baseline(file)
    directory = os.path.dirname(os.path.abspath(file))
    kept_reports = []
    hidden = 0
    checked: dict[str, str] = {}
    for report in reports:
        path = _key_path(report.path, directory)
        checked[path] = report.path
        kept = []
        for finding, fingerprint in zip(report.findings, report_fingerprints(report)):
            key = (path, finding.code, fingerprint.digest)
            if remaining[key] > 0:
                remaining[key] -= 1
                hidden += 1
            else:
                kept.append(finding)
        kept_reports.append(dataclasses.replace(report, findings=kept))
    stale = sum(
        count
        for (path, code, _), count in remaining.items()
        if count > 0 and path in checked and settings.is_selected(code, checked[path])
    )
    return BaselineResult(kept_reports, hidden, stale)

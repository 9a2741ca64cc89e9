"""``check --statistics``, ``--show-settings`` and ``-v``: other views of a run's settings and findings."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import TextIO

from dtype_lint.findings import Finding, Safety
from dtype_lint.wording import plural


def _fixability(findings: list[Finding], unsafe_fixes: bool = False) -> str:
    """``[*]`` when `fix` can fix them, ``[-]`` only with --unsafe-fixes, ``[ ]`` not at all (ruff's
    marks); ``unsafe_fixes`` (``check --unsafe-fixes``): unsafe fixes count as applicable."""
    safeties = {finding.fix.safety for finding in findings if finding.fix is not None}
    if Safety.SAFE in safeties or (unsafe_fixes and safeties):
        return "[*]"
    return "[-]" if safeties else "[ ]"


# The formats whose statistics are data; every other format (text, concise, github, sarif,
# rdjson, junit, gitlab) gets flake8's and ruff's table: statistics are for a person to read.
JSON_STATISTICS = ("json", "json-lines")


def statistics(reports, output_format: str, out: TextIO, unsafe_fixes: bool = False) -> None:
    by_code: dict[str, list[Finding]] = {}
    for report in reports:
        for finding in report.findings:
            by_code.setdefault(finding.code, []).append(finding)
    counts = Counter({code: len(found) for code, found in by_code.items()})
    # Most frequent first, ties by code: deterministic.
    rows = sorted(by_code, key=lambda code: (-counts[code], code))
    if output_format not in JSON_STATISTICS:
        width = max((len(str(counts[code])) for code in rows), default=1)
        for code in rows:
            found = by_code[code]
            out.write(f"{counts[code]:>{width}}\t{code}\t{_fixability(found, unsafe_fixes)} {found[0].name}\n")
        return
    data = [
        {
            "code": code,
            "name": by_code[code][0].name,
            "count": counts[code],
            "fixable": sum(1 for f in by_code[code] if f.fix is not None and f.fix.safety is Safety.SAFE),
            "unsafe_fixable": sum(1 for f in by_code[code] if f.fix is not None and f.fix.safety is Safety.UNSAFE),
        }
        for code in rows
    ]
    if output_format == "json-lines":
        for row in data:
            out.write(json.dumps(row) + "\n")
        return
    json.dump(data, out, indent=2)
    out.write("\n")


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple) and value and all(isinstance(item, tuple) for item in value):
        inner = ", ".join(f"{json.dumps(pattern)} = {_toml_value(codes)}" for pattern, codes in value)
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, tuple):
        return "[" + ", ".join(json.dumps(item) for item in value) + "]"
    if hasattr(value, "label"):
        return json.dumps(value.label)
    return json.dumps(value)


def show_settings(paths: list[str], settings, out: TextIO) -> None:
    from dtype_lint.printable import printable

    out.write(f"# settings for {printable(paths[0])}\n")
    out.write(f"# config: {printable(str(settings.config_path or '(none: defaults)'))}\n")
    out.write(f"# root: {printable(str(settings.root))}\n")
    sources = dict(settings.target_sources)
    for field in dataclasses.fields(settings):
        if field.name in ("root", "config_path", "target_sources"):
            continue
        key, value = field.name.replace("_", "-"), getattr(settings, field.name)
        # Targets say where they came from: the configuration, the command line or a declaration.
        source = sources.get(key)
        if key == "torch-admits":  # read from the declarations, never configured
            if value is not None:
                out.write(f"# torch-admits: {json.dumps(value or 'any')} (from {source})\n")
            continue
        if value is None:
            why = f" ({source})" if source else (" (no lower bound declared)" if key.startswith("target-") else "")
            out.write(f"# {key}: not set{why}\n")
        else:
            out.write(f"{key} = {_toml_value(value)}" + (f"  # from {source}" if source else "") + "\n")


def describe_configs(files: list[tuple[str, str]], resolver, out: TextIO) -> None:
    """``-v``: which configuration each group of files took."""
    from dtype_lint.printable import printable

    counts: Counter = Counter(resolver(fs_path).config_path or "(no config: defaults)" for _, fs_path in files)
    for config in sorted(counts):
        out.write(f"dtype-lint: {plural(counts[config], 'file')} with {printable(str(config))}\n")

"""The flake8 entry point (code prefix ``DTL``): adapts findings, no logic of its own.

It checks the lines flake8 hands it (no re-reading), reports 0-based columns as flake8 expects
(flake8 prints column + 1, so columns match the CLI's), and leaves ``--select``/``--ignore`` and
``# noqa`` (and ``# flake8: noqa``) to flake8. It applies what flake8 cannot know: a suppression on
the first line of a multi-line statement, ``# dtype-lint: ignore[...]``, the file-level
``# dtype-lint: noqa[: CODES]`` (suppress.py), the project's baseline (``baseline = "..."``) and
its opting in to DTL002.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import os
from typing import Iterator

from dtype_lint import __version__


class DtypeLintChecker:
    name = "dtype-lint"
    version = __version__
    _disable_noqa = False

    def __init__(self, tree: ast.AST, lines: list[str], filename: str) -> None:
        self.lines = lines
        self.filename = filename

    @classmethod
    def parse_options(cls, options) -> None:
        cls._disable_noqa = bool(getattr(options, "disable_noqa", False))

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from dtype_lint.engine import check_text

        settings = _settings_for(os.path.dirname(os.path.abspath(self.filename)))
        report = check_text("".join(self.lines), self.filename, settings, use_noqa=not self._disable_noqa)
        if settings.baseline:  # the project's `baseline = "..."`: only new findings
            from dtype_lint.baseline import apply_baseline

            (report,) = apply_baseline([report], settings.baseline, settings).reports
        for finding in report.findings:
            yield finding.line, finding.column - 1, f"{finding.code} {finding.message}", type(self)


@functools.lru_cache(maxsize=64)
def _settings_for(directory: str):
    """The project's settings, less selection: flake8's own select/ignore decide which codes show."""
    from dtype_lint.config import OPT_IN_CODES, Settings, load_settings
    from dtype_lint.errors import UsageError
    from dtype_lint.targets import with_project_targets

    try:
        settings = load_settings(directory)
    except UsageError:
        settings = Settings()
    settings = with_project_targets(settings, directory)
    # An opt-in rule (DTL002) is reported when the project's config selects it, as in the CLI.
    opted_in = tuple(code for code in sorted(OPT_IN_CODES) if settings.is_selected(code))
    return dataclasses.replace(settings, select=("DTL",), ignore=(), extend_select=opted_in, per_file_ignores=())

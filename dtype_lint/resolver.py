"""Which settings apply to each file: the nearest config above it (a dtype-lint.toml, or a
pyproject.toml with a [tool.dtype-lint] table: ruff's hierarchical discovery), or the one
``--config`` names, with the command line's flags on top, and the target versions the
configuration leaves unset read from the project's dependency declarations nearest the file
(targets.py). The answer depends on the file alone, never on the order of the paths given, and
each directory is looked up once per run."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from dtype_lint.config import CONFIG_NAMES, Settings, config_in, load_settings, settings_from_file, with_overrides
from dtype_lint.targets import with_project_targets


class SettingsResolver:
    def __init__(self, config: str | None = None, overrides: dict[str, Any] | None = None,
                 extend_exclude: tuple[str, ...] = (), extend_per_file_ignores: tuple = ()) -> None:
        self._overrides = overrides or {}
        self._extend_exclude = extend_exclude
        self._extend_per_file_ignores = extend_per_file_ignores
        self._fixed = self._finish(load_settings(".", config)) if config is not None else None
        self._config_by_directory: dict[str, Path | None] = {}
        self._by_config: dict[Path | None, Settings] = {}
        self._interned: dict[Settings, Settings] = {}

    def _finish(self, settings: Settings) -> Settings:
        settings = with_overrides(settings, **self._overrides)
        if self._extend_exclude:
            settings = dataclasses.replace(settings, extend_exclude=settings.extend_exclude + self._extend_exclude)
        if self._extend_per_file_ignores:
            settings = dataclasses.replace(
                settings, per_file_ignores=settings.per_file_ignores + self._extend_per_file_ignores)
        return settings

    def _nearest_config(self, directory: str) -> Path | None:
        known = self._config_by_directory
        walked: list[str] = []
        current = directory
        while current not in known:
            walked.append(current)
            # os.path first: most directories hold no pyproject.toml (a walk asks for each one).
            has_config = any(os.path.exists(os.path.join(current, name)) for name in CONFIG_NAMES)
            found = config_in(Path(current)) if has_config else None
            if found is not None:
                known[current] = found
                break
            parent = os.path.dirname(current)
            if parent == current:
                known[current] = None
                break
            current = parent
        answer = known[current]
        for seen in walked:
            known[seen] = answer
        return answer

    def for_directory(self, directory: str) -> Settings:
        directory = os.path.abspath(directory)
        settings = self._fixed
        if settings is None:
            found = self._nearest_config(directory)
            settings = self._by_config.get(found)
            if settings is None:
                base = settings_from_file(found) if found is not None else Settings(root=os.getcwd())
                settings = self._by_config[found] = self._finish(base)
        # One object per distinct result: the cache and the worker pool key on equal settings.
        targeted = with_project_targets(settings, directory)
        return self._interned.setdefault(targeted, targeted)

    def for_path(self, path: str) -> Settings:
        """The settings for a file or a directory (stdin's ``-`` counts as the working directory)."""
        if path == "-" or os.path.isdir(path):
            return self.for_directory(path if path != "-" else ".")
        return self.for_directory(os.path.dirname(path) or ".")

    def __call__(self, path: str) -> Settings:
        return self.for_path(path)

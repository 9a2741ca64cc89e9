"""``[tool.dtype-lint]`` in pyproject.toml, and CLI flags on top of it, as one frozen Settings."""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from dtype_lint.errors import UsageError
from dtype_lint.findings import Confidence
from dtype_lint.versions import python_version

SELECTOR = re.compile(r"^(ALL|DTL\d{0,3})$")
# One module each in dtype_lint/report/ (``json-lines`` -> json_lines_format.py).
OUTPUT_FORMATS = ("text", "concise", "json", "json-lines", "sarif", "github", "rdjson", "junit", "gitlab")
# ruff's names for ours: its default ``full`` is our ``text`` (findings with their source lines).
OUTPUT_FORMAT_ALIASES = {"full": "text"}
OUTPUT_FORMAT_CHOICES = OUTPUT_FORMATS + tuple(OUTPUT_FORMAT_ALIASES)


def output_format_name(value: str) -> str:
    """The format ``value`` names (an alias resolved); unknown names are left for the caller to refuse."""
    return OUTPUT_FORMAT_ALIASES.get(value, value)
VERSION = re.compile(r"\d+(\.\d+)*")  # target-torch, target-transformers
# Rules a prefix (the default ``DTL`` too) does not select: only their own code or ALL does.
# DTL002 (unused-noqa, rules/tool.py) judges the comments of a run with some rules switched off.
OPT_IN_CODES = frozenset({"DTL002"})


@dataclasses.dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("DTL",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    # Exclude even the files named on the command line (pre-commit names every staged file).
    force_exclude: bool = False
    min_confidence: Confidence = Confidence.MEDIUM
    output_format: str = "text"
    # The oldest release of each library the project supports ("2.4"): read from its dependency
    # declarations (targets.py) unless configured. API-migration rules (DTL201, DTL210, DTL601,
    # DTL701) suggest a replacement only where it exists on that release; None: not known.
    target_torch: str | None = None
    target_transformers: str | None = None
    target_accelerate: str | None = None
    target_diffusers: str | None = None
    target_peft: str | None = None
    # The oldest Python the code is written for ("3.12"; requires-python's lower bound): newer
    # syntax than the running interpreter's is judged by libcst's grammar when the target allows
    # it (None: any), else reported as DTL001.
    target_version: str | None = None
    # The torch versions the project's declarations admit, as the one admitting the newest spells
    # them (">=1.10", "==2.1.0", "" when unbounded): users install the newest release allowed, so a
    # premise that holds only on old torch (DTL203) asks this. Read with target_torch; None when
    # target-torch is configured (then the configured torch is the one checked) or not declared.
    torch_admits: str | None = None
    # Where each target set above came from: (key, "pyproject.toml [tool.dtype-lint]" or
    # "command line" or "requirements.txt:3 (torch>=2.1)"), for --show-settings.
    target_sources: tuple[tuple[str, str], ...] = ()
    # Directory of the config file: per-file-ignores and exclude patterns are relative to it.
    root: str = "."
    config_path: str | None = None
    # A baseline file (absolute): findings recorded in it are not reported (see baseline.py).
    baseline: str | None = None

    def is_selected(self, code: str, path: str | None = None) -> bool:
        chosen = _longest_prefix(code, self.select + self.extend_select)
        if code in OPT_IN_CODES and chosen not in (code, ""):
            return False  # selected by its own code (or ALL) only, as ruff's RUF100 is not on by default
        dropped = _longest_prefix(code, self.ignore + self.ignores_for(path))
        if chosen is None:
            return False
        return dropped is None or len(chosen) > len(dropped)

    def ignores_for(self, path: str | None) -> tuple[str, ...]:
        if path is None or not self.per_file_ignores:
            return ()
        relative = self.relative(path)
        codes: list[str] = []
        for pattern, pattern_codes in self.per_file_ignores:
            if self._matches(path, relative, pattern):
                codes.extend(pattern_codes)
        return tuple(codes)

    def is_excluded(self, path: str) -> bool:
        if not (self.exclude or self.extend_exclude):
            return False
        relative = self.relative(path)
        return any(self._matches(path, relative, pattern) for pattern in self.exclude + self.extend_exclude)

    @staticmethod
    def _matches(path: str, relative: str, pattern: str) -> bool:
        """Config patterns are relative to ``root``; the command line's absolute ones (made from
        the working directory) match the absolute path."""
        if os.path.isabs(pattern):
            return _glob_match(Path(os.path.abspath(path)).as_posix(), Path(pattern).as_posix())
        return _glob_match(relative, pattern)

    def relative(self, path: str) -> str:
        absolute = os.path.abspath(path)
        root = os.path.abspath(self.root)
        try:
            relative = os.path.relpath(absolute, root)
        except ValueError:
            relative = absolute
        return Path(relative).as_posix()

    def cache_key(self) -> str:
        """What of these settings changes findings (the cache keys on it)."""
        fields = dataclasses.asdict(self)
        for unrelated in (
            "output_format", "root", "config_path", "exclude", "extend_exclude", "force_exclude", "baseline",
            "target_sources",
        ):
            fields.pop(unrelated)
        return repr(sorted(fields.items()))


def _longest_prefix(code: str, selectors: tuple[str, ...]) -> str | None:
    best: str | None = None
    for selector in selectors:
        prefix = "" if selector == "ALL" else selector
        if code.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


def _glob_match(relative: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(relative, pattern + "/*"):
        return True
    if "/" not in pattern:
        # A bare name matches any path component, as in .gitignore.
        return any(fnmatch.fnmatchcase(part, pattern) for part in relative.split("/"))
    return False


# -- reading -----------------------------------------------------------------------------------
def _selector_list(key: str, value: Any, source: str) -> tuple[str, ...]:
    from dtype_lint.selectors import normalise_selector

    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UsageError(f"{source}: '{key}' must be a list of rule codes")
    try:
        return tuple(normalise_selector(item) for item in value)
    except ValueError as error:
        raise UsageError(f"{source}: '{key}': {error}") from None


def _string_list(key: str, value: Any, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UsageError(f"{source}: '{key}' must be a list of strings")
    return tuple(value)


def _per_file_ignores(value: Any, source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise UsageError(f"{source}: 'per-file-ignores' must be a table of glob = [codes]")
    return tuple(
        (pattern, _selector_list(f"per-file-ignores.{pattern}", codes, source))
        for pattern, codes in sorted(value.items())
    )


def _confidence(value: Any, source: str) -> Confidence:
    try:
        return Confidence.parse(value) if isinstance(value, str) else Confidence.parse(repr(value))
    except ValueError as error:
        raise UsageError(f"{source}: 'min-confidence': {error}") from None


def _output_format(value: Any, source: str) -> str:
    if value not in OUTPUT_FORMAT_CHOICES:
        raise UsageError(f"{source}: 'output-format' must be one of {', '.join(OUTPUT_FORMAT_CHOICES)}")
    return output_format_name(value)


def _version(key: str, example: str):
    def parse(value: Any, source: str) -> str:
        if not isinstance(value, str) or not VERSION.fullmatch(value):
            raise UsageError(f"{source}: '{key}' must be a version such as \"{example}\"")
        return value

    return parse


def _python_version(value: Any, source: str) -> str:
    version = python_version(value) if isinstance(value, str) else None
    if version is None:
        raise UsageError(f"{source}: 'target-version' must be a Python version such as \"3.12\" or \"py312\"")
    return version


def _boolean(key: str):
    def parse(value: Any, source: str) -> bool:
        if not isinstance(value, bool):
            raise UsageError(f"{source}: '{key}' must be true or false")
        return value

    return parse


def _baseline_path(value: Any, source: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{source}: 'baseline' must be a file name such as \"dtype-lint-baseline.json\"")
    # Relative to the config file's directory, wherever the run starts.
    return os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(source)), value))


def _per_file_ignores_key(key: str):
    def parse(value: Any, source: str):
        return {key.replace("-", "_"): _per_file_ignores(value, source)}

    return parse


_KEYS = {
    "select": lambda v, s: {"select": _selector_list("select", v, s)},
    "ignore": lambda v, s: {"ignore": _selector_list("ignore", v, s)},
    "extend-select": lambda v, s: {"extend_select": _selector_list("extend-select", v, s)},
    "per-file-ignores": _per_file_ignores_key("per-file-ignores"),
    "extend-per-file-ignores": _per_file_ignores_key("extend-per-file-ignores"),
    "exclude": lambda v, s: {"exclude": _string_list("exclude", v, s)},
    "extend-exclude": lambda v, s: {"extend_exclude": _string_list("extend-exclude", v, s)},
    "force-exclude": lambda v, s: {"force_exclude": _boolean("force-exclude")(v, s)},
    "min-confidence": lambda v, s: {"min_confidence": _confidence(v, s)},
    "output-format": lambda v, s: {"output_format": _output_format(v, s)},
    "target-transformers": lambda v, s: {"target_transformers": _version("target-transformers", "4.56")(v, s)},
    "target-torch": lambda v, s: {"target_torch": _version("target-torch", "2.4")(v, s)},
    "target-accelerate": lambda v, s: {"target_accelerate": _version("target-accelerate", "1.0")(v, s)},
    "target-diffusers": lambda v, s: {"target_diffusers": _version("target-diffusers", "0.30")(v, s)},
    "target-peft": lambda v, s: {"target_peft": _version("target-peft", "0.13")(v, s)},
    "baseline": lambda v, s: {"baseline": _baseline_path(v, s)},
    "target-version": lambda v, s: {"target_version": _python_version(v, s)},
}
TARGET_KEYS = ("target-version", "target-torch", "target-transformers", "target-accelerate", "target-diffusers",
               "target-peft")

# The files that hold settings, in the order one folder's are preferred (ruff's .ruff.toml,
# ruff.toml, pyproject.toml): the dedicated ones are the table itself, pyproject.toml holds it
# under [tool.dtype-lint].
DEDICATED_CONFIG_NAMES = (".dtype-lint.toml", "dtype-lint.toml")
CONFIG_NAMES = DEDICATED_CONFIG_NAMES + ("pyproject.toml",)


def settings_from_table(table: dict[str, Any], source: str, root: str) -> Settings:
    values: dict[str, Any] = {"root": root, "config_path": source}
    path = Path(os.path.abspath(source))
    values.update(_layered_values(table, source, path, (path,)))
    return Settings(**values)


# Fields a layer adds to what the config it extends set (ruff's extend-* keys; ``ignore`` too, as
# ruff applies each layer's ignores in turn), and where they add: the others replace.
_ADDED = {"extend_select": "extend_select", "extend_exclude": "extend_exclude", "ignore": "ignore",
          "extend_per_file_ignores": "per_file_ignores"}


def _layered_values(table: dict[str, Any], source: str, path: Path, chain: tuple[Path, ...]) -> dict[str, Any]:
    """The Settings fields ``table`` (of the config ``source`` names, at ``path``) sets, on top of
    those of the config its ``extend`` names (ruff's ``extend``: the named file first, this one
    over it)."""
    values = _layered_values(*_extended(table["extend"], path, chain)) if "extend" in table else {}
    own: dict[str, Any] = {}
    for key in sorted(table):
        parse = _KEYS.get(key)
        if parse is None and key != "extend":
            raise UsageError(f"{source}: unknown key '{key}' in [tool.dtype-lint]")
        if parse is not None:
            own.update(parse(table[key], source))
    if "select" in own:  # a new selection starts over: what the extended config added or removed goes
        values.pop("ignore", None)
        values.pop("extend_select", None)
    values.update((key, value) for key, value in own.items() if key not in _ADDED)
    for key, value in own.items():
        if key in _ADDED:
            values[_ADDED[key]] = values.get(_ADDED[key], ()) + value
    # Where each target version was set (``--show-settings``): this file's over the extended one's.
    own_targets = tuple((key, f"{source} [tool.dtype-lint]") for key in sorted(table) if key in TARGET_KEYS)
    inherited = tuple(item for item in values.get("target_sources", ()) if item[0] not in dict(own_targets))
    values["target_sources"] = inherited + own_targets
    return values


def _extended(extend: Any, path: Path, chain: tuple[Path, ...]) -> tuple[dict[str, Any], str, Path, tuple[Path, ...]]:
    """The table, name, path and chain of the config ``extend`` names (relative to ``path``'s folder)."""
    if not isinstance(extend, str) or not extend.strip():
        raise UsageError(f"{path}: 'extend' must be the path of another config file")
    target = Path(os.path.expandvars(os.path.expanduser(extend)))
    target = Path(os.path.abspath(path.parent / target))
    if target in chain:
        raise UsageError(f"{path}: 'extend' = \"{extend}\" makes a cycle ({' -> '.join(str(p) for p in (*chain, target))})")
    if not target.is_file():
        raise UsageError(f"{path}: 'extend': config file not found: {extend}")
    return table_of(target), str(target), target, (*chain, target)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise UsageError(f"cannot read config {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{path}: invalid TOML: {error}") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"{path}: invalid TOML: not UTF-8 (byte {error.start + 1})") from None
    except RecursionError:  # arrays or inline tables nested thousands deep
        raise UsageError(f"{path}: invalid TOML: nested too deeply") from None


def _tool_table(data: dict[str, Any], path: Path) -> dict[str, Any] | None:
    """The ``[tool.dtype-lint]`` table of a pyproject.toml's data; None when it has none."""
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise UsageError(f"{path}: 'tool' must be a table (such as [tool.dtype-lint])")
    table = tool.get("dtype-lint")
    if table is not None and not isinstance(table, dict):
        raise UsageError(f"{path}: [tool.dtype-lint] must be a table")
    return table


def table_of(path: Path) -> dict[str, Any]:
    """The settings table a config file holds: a pyproject.toml's [tool.dtype-lint] (empty when
    it has none), the whole of any other file (dtype-lint.toml, as ruff.toml)."""
    data = _read_toml(path)
    if path.name != "pyproject.toml":
        return data
    return _tool_table(data, path) or {}


def find_config(start: str) -> Path | None:
    """The nearest config (see ``config_in``) at or above ``start``."""
    directory = Path(os.path.abspath(start))
    if not directory.is_dir():
        directory = directory.parent
    for candidate_dir in (directory, *directory.parents):
        candidate = config_in(candidate_dir)
        if candidate is not None:
            return candidate
    return None


# Only these pyproject.toml files are parsed (most are other tools' only): the ones that name us,
# and the ones whose ``tool`` is a plain value (``tool = 5``), which cannot hold our table.
MAYBE_OURS = re.compile(r"dtype-lint|^[ \t]*tool[ \t]*=", re.MULTILINE)


def config_in(directory: Path) -> Path | None:
    """``directory``'s config: a ``.dtype-lint.toml`` or ``dtype-lint.toml`` (even empty, as ruff
    uses a ruff.toml), else its pyproject.toml when it holds a [tool.dtype-lint] table. An
    unreadable directory or file holds none."""
    for name in DEDICATED_CONFIG_NAMES:
        try:
            if (directory / name).is_file():
                return directory / name
        except OSError:
            return None
    candidate = directory / "pyproject.toml"
    try:
        if not candidate.is_file():
            return None
        text = candidate.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if MAYBE_OURS.search(text) and _tool_table(_read_toml(candidate), candidate) is not None:
        return candidate
    return None


def load_settings(start: str = ".", config: str | None = None) -> Settings:
    if config is not None:
        path = Path(config)
        if not path.is_file():
            raise UsageError(f"config file not found: {config}")
        return settings_from_table(table_of(path), str(path), str(path.parent))
    found = find_config(start)
    if found is None:
        return Settings(root=os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or "."))
    return settings_from_file(found)


def settings_from_file(found: Path) -> Settings:
    """The settings of a config file found by discovery (``config_in``)."""
    return settings_from_table(table_of(found), str(found), str(found.parent))


def with_overrides(settings: Settings, **overrides: Any) -> Settings:
    """CLI flags override the file; None means the flag was not given."""
    given = {key: value for key, value in overrides.items() if value is not None}
    flagged = {field.replace("_", "-") for field in given} & set(TARGET_KEYS)
    if flagged:
        kept = tuple(item for item in settings.target_sources if item[0] not in flagged)
        given["target_sources"] = tuple(sorted(kept + tuple((key, "command line") for key in flagged)))
    return dataclasses.replace(settings, **given)

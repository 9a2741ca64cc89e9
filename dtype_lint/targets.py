"""The versions a project supports, read from its dependency declarations (as ruff reads
``requires-python``): the lower bounds of Python, torch, transformers, accelerate, diffusers and
peft. API-migration rules ask them whether a replacement API exists on the oldest version the
project still runs on.

Where: walking up from a file's directory, the first directory whose declarations name a package
decides that package (each package on its own: a sub-package's ``setup.py`` that names only
``numpy`` leaves torch to the repository root). A directory's declarations are its
``pyproject.toml`` (``[project] requires-python``, ``dependencies``, ``optional-dependencies``;
``[tool.poetry.dependencies]``), ``setup.cfg`` (``[options] install_requires``,
``python_requires``, ``[options.extras_require]``), ``setup.py`` (read as text with ``ast``, never
run: ``python_requires=`` and every string literal that is a requirement of one of the packages),
``requirements*.txt`` and ``requirements/*.txt`` (following ``-r``/``-c``), and
``environment*.yml`` (conda's ``pytorch=1.12.1``, ``python=3.8`` and its ``pip:`` list). Among a
directory's declarations the lowest bound wins: the project supports the oldest version any of
them admits. A declaration without a bound (``torch``) leaves the version unknown.

The newest torch the declarations admit is read too (``torch_admits``): among the nearest
directory's torch declarations, the one with the highest ceiling (``<2.3``, ``==2.1.0``; none:
unbounded). A runtime premise that holds only on old torch (DTL203) asks it, since users install
the newest release a project admits, not its floor.

Configuration (``target-torch = "2.4"``) and command-line flags override what is read here.
"""

from __future__ import annotations

import ast
import configparser
import dataclasses
import functools
import os
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from dtype_lint.versions import ceiling, lower_bound, newest_of, release

# Settings field -> the package whose lower bound fills it ("python": requires-python).
TARGET_FIELDS = {
    "target_version": "python",
    "target_torch": "torch",
    "target_transformers": "transformers",
    "target_accelerate": "accelerate",
    "target_diffusers": "diffusers",
    "target_peft": "peft",
}
_PACKAGES = set(TARGET_FIELDS.values())
# Conda spells torch "pytorch".
_ALIASES = {"pytorch": "torch"}
_REQUIREMENT = re.compile(
    r"\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*\(?(?P<spec>[^;@()]*)\)?\s*(;.*)?"
)


@dataclasses.dataclass(frozen=True)
class Declared:
    """One declaration of a package: its lower bound (None: declared without one) and where."""

    package: str
    bound: str | None
    path: str
    line: int
    text: str
    # The specifier as written (">=2.1,<2.3"): what its ceiling is read from.
    spec: str = ""

    @property
    def where(self) -> str:
        return f"{_display(self.path)}:{self.line} ({self.text.strip()})"


def _display(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _package(name: str) -> str | None:
    normal = re.sub(r"[-_.]+", "-", name).lower()
    normal = _ALIASES.get(normal, normal)
    return normal if normal in _PACKAGES - {"python"} else None


def _requirement(text: str, path: str, line: int) -> Declared | None:
    """A PEP 508 requirement of one of the packages (``torch>=2.1; python_version>'3.8'``)."""
    match = _REQUIREMENT.fullmatch(text.strip())
    if match is None:
        return None
    package = _package(match.group("name"))
    if package is None:
        return None
    spec = match.group("spec").strip()
    return Declared(package, lower_bound(spec), path, line, text, spec)


def _line_of(text: str, needle: str) -> int:
    index = text.find(needle)
    return text.count("\n", 0, index) + 1 if index >= 0 else 1


# -- one reader per kind of file ----------------------------------------------------------------
def _read_requirements(path: Path, seen: set[Path]) -> list[Declared]:
    resolved = path.resolve()
    if resolved in seen:
        return []
    seen.add(resolved)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found: list[Declared] = []
    for number, raw in enumerate(text.replace("\\\n", " ").split("\n"), start=1):
        line = re.sub(r"(^|\s)#.*", "", raw).strip()
        include = re.match(r"(-r|--requirement|-c|--constraint)\s*=?\s*(\S+)", line)
        if include is not None:
            found.extend(_read_requirements(path.parent / include.group(2), seen))
            continue
        if not line or line.startswith("-"):
            continue
        declared = _requirement(line, str(path), number)
        if declared is not None:
            found.append(declared)
    return found


def _read_pyproject(path: Path) -> list[Declared]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        data = tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError):
        return []
    found: list[Declared] = []
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    requires = project.get("requires-python")
    if isinstance(requires, str):
        found.append(Declared("python", lower_bound(requires), str(path), _line_of(text, "requires-python"),
                              f"requires-python = {requires!r}"))
    groups = [project.get("dependencies")]
    extras = project.get("optional-dependencies")
    if isinstance(extras, dict):
        groups.extend(extras[name] for name in sorted(extras))
    for group in groups:
        for item in group if isinstance(group, list) else ():
            if isinstance(item, str):
                declared = _requirement(item, str(path), _line_of(text, item))
                if declared is not None:
                    found.append(declared)
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
    dependencies = poetry.get("dependencies") if isinstance(poetry, dict) else None
    for name, value in sorted(dependencies.items()) if isinstance(dependencies, dict) else ():
        spec = value.get("version") if isinstance(value, dict) else value
        package = "python" if name == "python" else _package(name)
        if package is not None and isinstance(spec, str):
            found.append(Declared(package, lower_bound(spec), str(path), _line_of(text, f"{name} ="),
                                  f"{name} = {spec!r}", spec))
    return found


def _read_setup_cfg(path: Path) -> list[Declared]:
    parser = configparser.RawConfigParser()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        parser.read_string(text)
    except (OSError, configparser.Error):
        return []
    found: list[Declared] = []
    if parser.has_option("options", "python_requires"):
        requires = parser.get("options", "python_requires")
        found.append(Declared("python", lower_bound(requires), str(path), _line_of(text, "python_requires"),
                              f"python_requires = {requires}"))
    values = [parser.get("options", "install_requires")] if parser.has_option("options", "install_requires") else []
    if parser.has_section("options.extras_require"):
        values.extend(value for _, value in sorted(parser.items("options.extras_require")))
    for value in values:
        for item in value.split("\n"):
            item = re.sub(r"(^|\s)#.*", "", item).strip()
            declared = _requirement(item, str(path), _line_of(text, item)) if item else None
            if declared is not None:
                found.append(declared)
    return found


def _read_setup_py(path: Path) -> list[Declared]:
    """Read as text, never run: ``python_requires=`` and the string literals that are
    requirements with a version (``"torch>=2.1"`` in ``install_requires`` or a list it names)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    strings = {}  # module-level NAME = "..." (dinov2's REQUIRES_PYTHON)
    for statement in tree.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)):
            strings[statement.targets[0].id] = statement.value.value
    found: list[Declared] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "python_requires":
            value = node.value
            text = value.value if isinstance(value, ast.Constant) else strings.get(getattr(value, "id", ""))
            if isinstance(text, str):
                found.append(Declared("python", lower_bound(text), str(path), node.value.lineno,
                                      f"python_requires={text!r}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search(r"[<>=~]", node.value):
            declared = _requirement(node.value, str(path), node.lineno)
            if declared is not None and (declared.bound is not None or ceiling(declared.spec) is not None):
                found.append(declared)
    return found


def _read_environment(path: Path) -> list[Declared]:
    """conda's ``- pytorch=1.12.1=py3.8_cuda11.3`` (``=`` is a prefix match: its lower bound is the
    version) and the ``- pip:`` list's PEP 508 requirements."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found: list[Declared] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        item = re.match(r"\s*-\s*([^#]+)", raw)
        if item is None:
            continue
        spec = item.group(1).strip().strip("'\"")
        conda = re.fullmatch(r"([A-Za-z0-9._-]+)\s*=(?!=)\s*([^=\s]+)(=\S*)?", spec)
        if conda is not None:
            spec = f"{conda.group(1)}=={conda.group(2)}"
        name = re.match(r"[A-Za-z0-9._-]+", spec)
        if name is not None and name.group(0).lower() == "python":
            found.append(Declared("python", lower_bound(spec[name.end():]), str(path), number, raw))
            continue
        declared = _requirement(spec, str(path), number)
        if declared is not None:
            found.append(dataclasses.replace(declared, text=raw))
    return found


def _files_of(directory: Path) -> list[tuple[Path, object]]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    files: list[tuple[Path, object]] = []
    for name in names:
        if name == "pyproject.toml":
            files.append((directory / name, _read_pyproject))
        elif name == "setup.cfg":
            files.append((directory / name, _read_setup_cfg))
        elif name == "setup.py":
            files.append((directory / name, _read_setup_py))
        elif name.startswith("requirements") and name.endswith(".txt"):
            files.append((directory / name, "requirements"))
        elif re.fullmatch(r"environment.*\.ya?ml", name):
            files.append((directory / name, _read_environment))
    nested = directory / "requirements"
    if nested.is_dir():
        try:
            files.extend((nested / name, "requirements") for name in sorted(os.listdir(nested)) if name.endswith(".txt"))
        except OSError:
            pass
    return [(path, reader) for path, reader in files if path.is_file()]


@functools.lru_cache(maxsize=4096)
def declarations_in(directory: str) -> tuple[Declared, ...]:
    """Every declaration of the packages in ``directory``'s own dependency files."""
    found: list[Declared] = []
    seen: set[Path] = set()
    for path, reader in _files_of(Path(directory)):
        found.extend(_read_requirements(path, seen) if reader == "requirements" else reader(path))
    return tuple(found)


@dataclasses.dataclass(frozen=True)
class Target:
    """The oldest version of a package the project supports, and the declaration it came from;
    ``admits``: the specifier of the declaration that admits the newest version ("" when it sets
    no bound), and ``admits_source`` where it is."""

    version: str | None
    source: str
    admits: str = ""
    admits_source: str = ""


@functools.lru_cache(maxsize=4096)
def project_targets(directory: str) -> dict[str, Target]:
    """Package -> Target for a file in ``directory``: for each package, the nearest directory
    (``directory`` or above) whose declarations name it, and the lowest bound among them."""
    found: dict[str, Target] = {}
    current = os.path.abspath(directory)
    while True:
        declared = declarations_in(current)
        for package in sorted({d.package for d in declared} - set(found)):
            mine = [d for d in declared if d.package == package]
            newest = _admitting_the_newest(mine)
            bounded = [d for d in mine if d.bound is not None]
            if bounded:
                lowest = min(bounded, key=lambda d: release(d.bound))
                found[package] = Target(lowest.bound, lowest.where, newest.spec, newest.where)
            else:
                found[package] = Target(None, f"{mine[0].where}, no lower bound", newest.spec, newest.where)
        parent = os.path.dirname(current)
        if parent == current or len(found) == len(_PACKAGES):
            return found
        current = parent


def _admitting_the_newest(declared: list[Declared]) -> Declared:
    """The declaration whose ceiling is highest: the first without one, if any has none."""
    highest = newest_of([ceiling(d.spec) for d in declared])
    return next(d for d in declared if ceiling(d.spec) == highest)


def with_project_targets(settings, directory: str):
    """``settings`` with each target the configuration left unset read from the project."""
    configured = {key for key, _ in settings.target_sources}
    targets = project_targets(directory)
    changes: dict[str, object] = {}
    sources = list(settings.target_sources)
    for field, package in TARGET_FIELDS.items():
        key = field.replace("_", "-")
        target = targets.get(package)
        if key in configured or target is None:
            continue
        changes[field] = target.version
        sources.append((key, target.source))
        if package == "torch":  # read, not configured: users run the newest torch it admits
            changes["torch_admits"] = target.admits
            sources.append(("torch-admits", target.admits_source))
    if not changes and len(sources) == len(settings.target_sources):
        return settings
    return dataclasses.replace(settings, target_sources=tuple(sorted(sources)), **changes)

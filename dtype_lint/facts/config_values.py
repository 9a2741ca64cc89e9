"""Values a program reads from its configuration: data files and Python config objects.

The project pass hands a file the settings it may read (``ctx.worlds.config``, see
dtype_lint/project/data_files.py and summary.py): ``data:training.mixed_precision`` for a key path
of the YAML/TOML/JSON files checked with it, ``py:cfg.environment.mixed_precision`` for a module
level config object another file defines and this one imports (``from config import cfg``),
``py:TrainConfig.bf16`` for a config class's default. Here an expression is resolved to those
settings: ``config["training"]["mixed_precision"]`` after ``config = toml.load(path)`` (also
``yaml.safe_load``, ``json.load``, ``OmegaConf.load``; ``.get("key")`` and attribute access too),
``cfg.architecture.backbone_dtype``, ``TrainConfig().bf16``. A data file is matched by the key
path alone (the path the program opens is mostly a variable), so every value the checked files
give that key is a reachable configuration, never a certain one: findings resting on a setting
are medium confidence at most.
"""

from __future__ import annotations

import dataclasses
import json

import libcst as cst

from dtype_lint.facts.names import dotted_name

# Calls that return a config file's contents as nested dicts (or an attribute-accessed DictConfig).
LOADERS = (
    "toml.load", "toml.loads", "tomllib.load", "tomllib.loads", "tomli.load", "tomli.loads",
    "yaml.safe_load", "yaml.load", "yaml.full_load", "yaml.unsafe_load", "json.load", "json.loads",
    "omegaconf.OmegaConf.load", "omegaconf.OmegaConf.create", "omegaconf.OmegaConf.merge",
)
# Calls that keep a config's contents: ``dict(config["cuda"])``, ``OmegaConf.to_container(cfg)``.
COPIES = ("dict", "vars", "copy", "deepcopy", "to_container", "to_object", "EasyDict", "edict", "AttrDict")
MAX_DEPTH = 4


@dataclasses.dataclass(frozen=True)
class Setting:
    """One value a setting may have: ``key`` (``training.mixed_precision``) is ``value`` at ``where``."""

    key: str
    value: object
    where: str  # "config.toml:2"

    def describe(self) -> str:
        shown = json.dumps(self.value)  # as the config files spell it: true, "bf16"
        return f"`{self.key} = {shown}` ({self.where})"


def table(ctx) -> dict:
    worlds = getattr(ctx, "worlds", None)
    return getattr(worlds, "config", None) or {}


def settings_of(ctx, expr: cst.BaseExpression | None) -> list[Setting]:
    """The values the config settings ``expr`` reads may have (empty: not a known setting)."""
    known = table(ctx)
    if not known or expr is None:
        return []
    from dtype_lint.facts.training import training_facts

    spelled = dotted_name(expr)
    if spelled is not None and spelled in training_facts(ctx).assignments:
        return []  # ``cfg.fp16 = args.fp16``: the file sets it itself
    found: list[Setting] = []
    seen: set = set()
    for key in _keys(ctx, expr, 0):
        for value, where in known.get(key, ()):
            if (repr(value), where) not in seen:  # one definition reached through two imports
                seen.add((repr(value), where))
                found.append(Setting(key.partition(":")[2], value, where))
    _remember(ctx, found)
    return found


def subtree_of(ctx, expr: cst.BaseExpression | None) -> dict[str, list[Setting]]:
    """The settings under the config section ``expr`` reads (``dict(config["cuda"])``), by their
    key inside the section."""
    known = table(ctx)
    if not known or expr is None:
        return {}
    found: dict[str, list[Setting]] = {}
    for key in _keys(ctx, expr, 0):
        prefix = key + "."
        for full, values in known.items():
            if full.startswith(prefix) and "." not in full[len(prefix):]:
                found.setdefault(full[len(prefix):], []).extend(
                    Setting(full.partition(":")[2], value, where) for value, where in values)
    _remember(ctx, [s for settings in found.values() for s in settings])
    return found


def used(ctx) -> list[Setting]:
    """The settings this file's rules have looked up so far (for messages)."""
    return list(getattr(ctx, "_config_used", ()))


def _remember(ctx, settings: list[Setting]) -> None:
    if settings:
        seen = ctx.__dict__.setdefault("_config_used", [])
        seen.extend(s for s in settings if s not in seen)


def _chain(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, list[str]] | None:
    """``config["a"].b.get("c")`` -> (``config``, ["a", "b", "c"]); copies are looked through."""
    parts: list[str] = []
    for _ in range(16):
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            index = expr.slice[0].slice.value
            if not (isinstance(index, cst.SimpleString) and isinstance(index.evaluated_value, str)):
                return None
            parts.append(index.evaluated_value)
            expr = expr.value
        elif isinstance(expr, cst.Attribute):
            parts.append(expr.attr.value)
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get" \
                and expr.args and isinstance(expr.args[0].value, cst.SimpleString) \
                and isinstance(expr.args[0].value.evaluated_value, str):
            parts.append(expr.args[0].value.evaluated_value)
            expr = expr.func.value
        elif isinstance(expr, cst.Call) and (dotted_name(expr.func) or "").rsplit(".", 1)[-1] in COPIES \
                and len(expr.args) == 1 and expr.args[0].keyword is None and not expr.args[0].star:
            expr = expr.args[0].value
        else:
            break
    parts.reverse()
    return expr, parts


def _keys(ctx, expr: cst.BaseExpression, depth: int) -> list[str]:
    """The table keys (``data:a.b``, ``py:cfg.a.b``) ``expr`` may read."""
    if depth > MAX_DEPTH:
        return []
    chained = _chain(expr)
    if chained is None:
        return []
    root, parts = chained
    keys: list[str] = []
    for prefix in _roots(ctx, root, depth):
        kind, _, path = prefix.partition(":")
        joined = ".".join(p for p in (path, *parts) if p)
        if joined:
            keys.append(f"{kind}:{joined}")
    return keys


def _roots(ctx, root: cst.BaseExpression, depth: int) -> list[str]:
    """What a chain's root holds: ``data:`` (a loaded config file), ``py:cfg`` (an imported
    config object), ``py:TrainConfig`` (an instance of a config class), or a section of those."""
    from dtype_lint.facts.training import training_facts

    found: list[str] = []
    if isinstance(root, cst.Call):
        if ctx.names.matches(root.func, *LOADERS):
            return ["data:"]
        name = dotted_name(root.func)
        # ``TrainConfig()``: the class's defaults (arguments may override any of them)
        return [f"py:{name}"] if name and not root.args and _known_prefix(ctx, f"py:{name}.") else []
    name = dotted_name(root)
    if name is None:
        return []
    if _known_prefix(ctx, f"py:{name}."):
        found.append(f"py:{name}")
    scope = ctx.enclosing(root, cst.FunctionDef)
    for statement, value in training_facts(ctx).assignments.get(name, ()):
        if ctx.enclosing(statement, cst.FunctionDef) not in (scope, None):
            continue  # a name of another function
        for key in _keys(ctx, value, depth + 1) or _roots(ctx, value, depth + 1):
            if key not in found:
                found.append(key)
    return found


def _known_prefix(ctx, prefix: str) -> bool:
    prefixes = ctx.__dict__.get("_config_prefixes")
    if prefixes is None:
        prefixes = set()
        for key in table(ctx):
            kind, _, path = key.partition(":")
            parts = path.split(".")
            for cut in range(1, len(parts)):
                prefixes.add(f"{kind}:{'.'.join(parts[:cut])}.")
        ctx.__dict__["_config_prefixes"] = prefixes
    return prefix in prefixes

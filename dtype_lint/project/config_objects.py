"""A file's config facts for its summary: whether it loads a config file, and the precision
settings of the config objects it defines at module level.

``cfg = SimpleNamespace(architecture=SimpleNamespace(backbone_dtype="bfloat16"))``,
``CONFIG = {"training": {"fp16": True}}`` and ``class TrainConfig: bf16: bool = True`` (a
dataclass's defaults, or plain class attributes) give ``cfg.architecture.backbone_dtype``,
``CONFIG.training.fp16`` (subscripts and attributes are one key path) and ``TrainConfig.bf16``.
Only the settings ``data_files.precision_setting`` keeps are recorded. Another file that imports
the object reads them through the project pass (worlds.Project.config_values).
"""

from __future__ import annotations

import ast

from dtype_lint.project.data_files import MAX_DEPTH, precision_setting

LOADER_MODULES = frozenset({"toml", "tomllib", "tomli", "yaml", "json", "omegaconf"})
LOADER_FUNCTIONS = frozenset({"load", "loads", "safe_load", "full_load", "unsafe_load", "create", "merge"})
NAMESPACES = frozenset({"SimpleNamespace", "dict", "Namespace", "EasyDict", "edict", "AttrDict", "ConfigDict",
                        "OmegaConf.create"})


def loads_config(calls, imports: dict[str, list[str]]) -> bool:
    """A call of a config loader (``toml.load``, ``yaml.safe_load``, ``OmegaConf.load``...)."""
    for call in calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in LOADER_FUNCTIONS):
            continue
        head = func.value
        while isinstance(head, ast.Attribute):
            head = head.value
        if isinstance(head, ast.Name) and any(t.split(".")[0] in LOADER_MODULES for t in imports.get(head.id, ())):
            return True
    return False


def module_values(tree: ast.Module) -> dict[str, list]:
    """``{"cfg.architecture.backbone_dtype": ["bfloat16", 4], ...}`` of the module level."""
    values: dict[str, list] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            _collect(statement.value, (statement.targets[0].id,), values, 0)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            _collect(statement.value, (statement.target.id,), values, 0)
        elif isinstance(statement, ast.ClassDef):
            for item in statement.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    _collect(_default(item.value), (statement.name, item.target.id), values, 0)
                elif isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                    _collect(item.value, (statement.name, item.targets[0].id), values, 0)
    return values


def _default(node: ast.expr) -> ast.expr:
    """``field(default=True)`` -> ``True``."""
    if isinstance(node, ast.Call) and _name(node.func) in ("field", "dataclasses.field", "Field", "pydantic.Field"):
        for keyword in node.keywords:
            if keyword.arg == "default":
                return keyword.value
        if node.args:
            return node.args[0]
    return node


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return ""


def _collect(node: ast.expr, path: tuple[str, ...], values: dict[str, list], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(node, ast.Constant):
        if len(path) > 1 and precision_setting(path, node.value):
            values[".".join(path)] = [node.value, node.lineno]
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                _collect(value, (*path, key.value), values, depth + 1)
    elif isinstance(node, ast.Call) and (_name(node.func) in NAMESPACES or _name(node.func).split(".")[-1] in NAMESPACES):
        for keyword in node.keywords:
            if keyword.arg is not None:
                _collect(keyword.value, (*path, keyword.arg), values, depth + 1)
        if len(node.args) == 1 and isinstance(node.args[0], ast.Dict):
            _collect(node.args[0], path, values, depth + 1)

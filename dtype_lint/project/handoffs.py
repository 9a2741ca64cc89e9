"""Framework handoffs in one file's summary: a model given to a framework that casts it.

``deepspeed.initialize(model=m, config=cfg)`` with ``{"fp16": {"enabled": True}}`` in ``cfg``,
``Trainer(precision="16-true").fit(m)``, ``deepspeed.init_inference(m, dtype=torch.half)``: the
class of ``m`` then runs (and, for a trainer, trains) in that dtype, like a class cast with
``.half()``. ``model.generate(logits_processor=[proc])`` of a float16 library model calls
``proc.__call__`` with float16 scores. Which calls do this, and with which arguments, is data in
``dtype_lint.facts.precision_sources`` (``HANDOFFS``, ``CALLBACKS``); this module reads CPython's
``ast`` the summary is built from and records each handoff as a cast with a ``setting`` (the
framework setting in words), ``trains`` and ``methods`` (a callback's methods).

A DeepSpeed config given by name is resolved here when the file binds it (a dict literal, a JSON
file path, ``json.load(open(path))``), else by the project pass through the file's imports
(``from configs import DS_CONFIG``): ``config_ref``; a JSON path: ``config_file``.
"""

from __future__ import annotations

import ast

from dtype_lint.facts.flow.values import LONG_NAMES
from dtype_lint.facts.precision_sources import (
    CALLBACKS, CATALOG, DEEPSPEED_KEYS, HANDOFFS, deepspeed_setting, lightning_params,
)
from dtype_lint.project.astnames import dotted as _dotted

LIGHTNING_MAKERS = frozenset(name for source in CATALOG if source.framework == "lightning" for name in source.callables)
MAX_LITERAL_DEPTH = 4
FRAMEWORK_NAMES = {"deepspeed": "DeepSpeed", "lightning": "Lightning"}
# The last names of the calls that may hand a model over (most calls of a file are not one).
CALL_NAMES = frozenset({name.rsplit(".", 1)[-1] for h in HANDOFFS for name in h.callables}
                       | {c.method for c in CALLBACKS})


def literal_config(node: ast.AST, depth: int = 0):
    """A dict literal as plain data, keeping the literal parts (``{"lr": args.lr}`` drops ``lr``)."""
    if depth > MAX_LITERAL_DEPTH:
        return None
    if isinstance(node, ast.Dict):
        found = {}
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                inner = literal_config(value, depth + 1)
                if inner is not None:
                    found[key.value] = inner
        return found
    if isinstance(node, ast.Call) and _dotted(node.func) == "dict" and not node.args:
        # ``dict(fp16=dict(enabled=True))``
        found = {}
        for keyword in node.keywords:
            inner = literal_config(keyword.value, depth + 1) if keyword.arg else None
            if inner is not None:
                found[keyword.arg] = inner
        return found
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bool, int, float)):
        return node.value
    return None


def setting_words(key: str) -> str:
    return f'under the DeepSpeed config `"{key}": {{"enabled": True}}`'


def json_path(node: ast.AST) -> str | None:
    """``"ds_config.json"`` or ``json.load(open("ds_config.json"))``: the JSON file named."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".json"):
        return node.value
    if isinstance(node, ast.Call) and node.args and (_dotted(node.func) or "").endswith("load"):
        inner = node.args[0]
        if isinstance(inner, ast.Call) and _dotted(inner.func) == "open" and inner.args:
            return json_path(inner.args[0])
    return None


def config_constant(node: ast.AST) -> dict | None:
    """What a name bound to ``node`` tells of a DeepSpeed config: its low key, or its JSON file."""
    if isinstance(node, (ast.Dict, ast.Call)):
        key = deepspeed_setting(literal_config(node))
        return {"dtype": DEEPSPEED_KEYS[key].params, "setting": setting_words(key)} if key else None
    path = json_path(node)
    return {"file": path} if path else None


def _argument(call: ast.Call, keyword: str, position: int | None) -> ast.AST | None:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    if position is not None and len(positional) == len(call.args) and position < len(positional):
        return positional[position]
    return None


class _NoConditions:
    @staticmethod
    def get(key: int) -> None:
        return None


_NO_CONDITIONS = _NoConditions()


class HandoffFinder:
    """The handoffs of one file; ``summarizer`` gives names (imports, refs, source text)."""

    def __init__(self, summarizer, everything: list[ast.AST]) -> None:
        self.summarizer = summarizer
        # file-wide, flow-insensitive: ``ds_config = {...}`` and ``trainer = Trainer(...)`` are
        # bound once, usually at module level or just before the call
        self.configs: dict[str, dict] = {}
        self.module_configs: dict[str, dict] = {}
        self.trainers: dict[str, tuple[str, bool, str]] = {}
        self.models: dict[str, dict] = {}  # module-level names of low-precision models
        self.flag_files: dict[str, str] = {}  # argparse dest -> its default JSON file
        self.flag_values: dict[str, list] = {}  # argparse dest -> the literals its choices/default offer
        module_level = {id(s) for s in summarizer.tree.body}
        for node in everything:
            if type(node) is ast.Call:
                self._flag_file(node)
            if type(node) is not ast.Assign or len(node.targets) != 1:
                continue
            target = _dotted(node.targets[0])
            if target is None:
                continue
            constant = config_constant(node.value)
            if constant is not None:
                constant = {**constant, "line": node.lineno}
                self.configs.setdefault(target, constant)
                if id(node) in module_level and "." not in target:
                    self.module_configs.setdefault(target, constant)
            if isinstance(node.value, ast.Call):
                trainer = self._trainer(node.value)
                if trainer is not None:
                    self.trainers.setdefault(target, trainer)
                if id(node) in module_level:  # ``lm = AutoModel.from_pretrained(..., dtype=torch.bfloat16)``
                    cast = summarizer._cast_of_name(node.value, summarizer.module_scope, _NO_CONDITIONS, anything=True)
                    if cast is not None:
                        self.models.setdefault(target, {**cast[1], "conditional": True})

    def _flag_file(self, call: ast.Call) -> None:
        """``parser.add_argument("--deepspeed_config", default="ds_config.json")``."""
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument" and call.args):
            return
        flag = call.args[0]
        if not (isinstance(flag, ast.Constant) and isinstance(flag.value, str) and flag.value.startswith("--")):
            return
        dest = flag.value[2:].replace("-", "_")
        default = _argument(call, "default", None)
        if default is not None and json_path(default):
            self.flag_files.setdefault(dest, json_path(default))
        choices = _argument(call, "choices", None)
        offered = [*(choices.elts if isinstance(choices, (ast.List, ast.Tuple, ast.Set)) else ()), default]
        values = self.flag_values.setdefault(dest, [])
        values.extend(v.value for v in offered if isinstance(v, ast.Constant) and v.value not in values)

    def _qualified(self, node: ast.AST) -> list[str]:
        name = _dotted(node)
        if name is None:
            return []
        head, _, rest = name.partition(".")
        return [target + (f".{rest}" if rest else "") for target in self.summarizer.imports.get(head, ())]

    def _trainer(self, call: ast.Call) -> tuple[str, bool, str] | None:
        """(parameter dtype, conditional, words) of ``Trainer(precision="16-true")`` (or of one
        branch of ``precision="16-true" if half else "32"``)."""
        if not LIGHTNING_MAKERS.intersection(self._qualified(call.func)):
            return None
        value = _argument(call, "precision", None)
        if isinstance(value, ast.IfExp):
            choices = [value.body, value.orelse]
        elif isinstance(value, ast.Attribute) and value.attr in self.flag_values:
            # ``precision=args.precision`` of ``add_argument("--precision", choices=[...])``
            choices = [ast.Constant(v) for v in self.flag_values[value.attr]]
        else:
            choices = [value]
        found = []
        for choice in choices:
            if isinstance(choice, ast.Constant):
                dtype = lightning_params(choice.value)
                if dtype is not None:
                    # a literal too: the CLI / a config file may override it (medium, like DeepSpeed's)
                    shown = ast.unparse(value) if value is not choice and not isinstance(value, ast.IfExp) else None
                    words = f"`precision={shown}` (\"{choice.value}\" on some runs)" if shown \
                        else f"`precision={choice.value!r}`"
                    found.append((dtype, True, f"under {FRAMEWORK_NAMES['lightning']}'s {words}"))
        # float16 first: it overflows, so it is the riskier world
        return min(found, key=lambda item: item[0] != "fp16") if found else None

    # -- the calls of one scope -------------------------------------------------------------------
    def casts(self, call: ast.Call, scope, cast_names: dict) -> list[dict]:
        """The handoffs ``call`` makes, as casts (without position and ownership)."""
        func = call.func
        if (func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None) \
                not in CALL_NAMES:
            return []
        found: list[dict] = []
        qualified = self._qualified(call.func)
        method = call.func.attr if isinstance(call.func, ast.Attribute) else None
        for handoff in HANDOFFS:
            if handoff.made_by is None:
                if not set(handoff.callables).intersection(qualified):
                    continue
                world = self._configured(call, handoff)
            else:
                if method not in handoff.callables:
                    continue
                receiver = call.func.value
                world = self.trainers.get(_dotted(receiver) or "") if not isinstance(receiver, ast.Call) \
                    else self._trainer(receiver)
                world = {"dtype": world[0], "conditional": world[1], "setting": world[2]} if world else None
            model = _argument(call, handoff.model, handoff.position)
            if world is None or model is None:
                continue
            refs = self.summarizer._refs(model, scope)
            if refs:
                found.append({**world, "refs": sorted(refs), "trains": handoff.trains})
        for callback in CALLBACKS:
            if method != callback.method:
                continue
            receiver = _dotted(call.func.value) or ""
            model = cast_names.get(receiver) or self.models.get(receiver)
            if model is None:
                continue
            for keyword in callback.keywords:
                value = _argument(call, keyword, None)
                refs = self.summarizer._refs(value, scope) if value is not None else set()
                if refs:
                    found.append({
                        "dtype": model["dtype"], "conditional": True, "refs": sorted(refs), "trains": False,
                        "setting": f"under `{callback.method}()` of the {LONG_NAMES[model['dtype']]} model of line "
                                   f"{model['line']}",
                        "methods": list(callback.calls),
                    })
        return found

    def _configured(self, call: ast.Call, handoff) -> dict | None:
        """The world a DeepSpeed call's config (or dtype) sets, or where to find its config."""
        for keyword in handoff.dtype:
            value = _argument(call, keyword, None)
            low = self.summarizer.low_spelling(value) if value is not None else None
            if low is not None:
                return {"dtype": low, "conditional": True,
                        "setting": f"under {FRAMEWORK_NAMES.get(handoff.framework, handoff.framework)}'s "
                                   f"`{keyword}={ast.unparse(value)}`"}
        for keyword in handoff.config:
            value = _argument(call, keyword, None)
            if value is None:
                continue
            if isinstance(value, ast.Attribute) and value.attr in self.flag_files:
                return {"dtype": None, "conditional": True, "config_file": self.flag_files[value.attr]}
            constant = config_constant(value)
            name = _dotted(value)
            if constant is None and name is not None:
                constant = self.configs.get(name)
                if constant is None:
                    return {"dtype": None, "conditional": True, "config_ref": name}
            if constant is None:
                return None
            if "file" in constant:
                return {"dtype": None, "conditional": True, "config_file": constant["file"]}
            return {"dtype": constant["dtype"], "conditional": True, "setting": constant["setting"]}
        if handoff.config and _argument(call, "args", 0) is not None and "deepspeed_config" in self.flag_files:
            # no config given: DeepSpeed reads ``args.deepspeed_config``, here the flag's default
            return {"dtype": None, "conditional": True, "config_file": self.flag_files["deepspeed_config"]}
        return None

"""The autocast part of a file's summary: what the file runs under autocast, and how.

- ``autocast_calls``: the calls made inside an enabled (or maybe enabled) autocast region,
  ``with torch.autocast("cuda", enabled=args.amp): out = self.model(x)``: what the callee may be
  (``refs``), the method called (``__call__`` for ``model(x)``, so its ``forward``), and the region
  (dtype, whether it is conditional, the condition, its line and text). A region nested in it
  that disables autocast is left out.
- ``framework_autocast``: the framework precision sources of the file that imply autocast
  (``Trainer(precision="16-mixed")``, ``Accelerator(mixed_precision="fp16")``,
  ``TrainingArguments(fp16=True)``), read with the catalog of facts/precision_sources.py.
- ``runner_calls``: the calls that hand a model to such a framework (``trainer.fit(model)``,
  ``accelerator.prepare(model)``, ``Trainer(model=model)``): the framework, the model's refs and
  the methods the framework runs under autocast.

Read from CPython's ``ast``, like the rest of the summary (summary.py).
"""

from __future__ import annotations

import ast

from dtype_lint.facts.amp import AUTOCAST, DEVICE_DEFAULTS, autocast_signature
from dtype_lint.facts.precision_sources import RUNNERS, catalog_effects
from dtype_lint.project.summary import CHAIN_METHODS, _dotted, _low_spelling

SHORT = {"float16": "fp16", "bfloat16": "bf16"}
NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _argument(call: ast.Call, keyword: str, position: int | None) -> ast.AST | None:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    if position is not None and position < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return None


def _literal(node: ast.AST | None):
    """A str / bool literal, an int as its text (Lightning's ``precision=16``), else None."""
    if isinstance(node, ast.Constant) and type(node.value) in (str, bool):
        return node.value
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return str(node.value)
    return None


class AutocastSummary:
    """Collects the three lists for one file; ``summarizer`` gives names, refs and source text."""

    def __init__(self, summarizer) -> None:
        self.summarizer = summarizer
        self.autocast_calls: list[dict] = []
        self.framework_autocast: list[dict] = []
        self.runner_calls: list[dict] = []
        self._module_bound: dict[str, dict] | None = None
        self._module_bindings: dict[str, set[str]] | None = None

    def as_dict(self) -> dict:
        return {"autocast_calls": self.autocast_calls, "framework_autocast": self.framework_autocast,
                "runner_calls": self.runner_calls}

    # -- names ------------------------------------------------------------------------------------
    def _qualified(self, func: ast.AST) -> str | None:
        dotted = _dotted(func)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        targets = self.summarizer.imports.get(head)
        if not targets:
            return None
        return targets[0] + (f".{rest}" if rest else "")

    # -- one scope ----------------------------------------------------------------------------------
    def scope(self, nodes, scope, conditions, defaults: dict) -> None:
        """The regions, sources and runners among ``nodes`` (one function's, or the module's)."""
        bound = None
        for node in nodes:
            kind = type(node)
            if kind is ast.With or kind is ast.AsyncWith:
                for item in node.items:
                    region = self._region(item.context_expr, conditions, defaults)
                    if region is None and isinstance(item.context_expr, ast.Name):
                        if bound is None:
                            bound = {**self._module_contexts(), **self._bound_contexts(nodes, conditions, defaults)}
                        region = bound.get(item.context_expr.id)
                    if region is not None:
                        self._calls_in(node.body, scope, region)
            elif kind is ast.Call:
                qualified = self._qualified(node.func)
                if qualified is not None:
                    self._framework(node, qualified, conditions)
                self._runner(node, qualified, scope)

    def _bound_contexts(self, nodes, conditions, defaults: dict) -> dict[str, dict]:
        """Names bound to an autocast region (nanoGPT's ``ctx = nullcontext() if device_type == "cpu"
        else torch.amp.autocast(device_type=device_type, dtype=ptdtype)``; ``with ctx:``)."""
        found: dict[str, dict] = {}
        for node in nodes:
            if type(node) is not ast.Assign or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                continue
            value = node.value
            if isinstance(value, ast.IfExp):
                test = ast.unparse(value.test)
                choices = ((value.body, test), (value.orelse, f"not ({test})"))
            else:
                choices = ((value, None),)
            for choice, condition in choices:
                region = self._region(choice, conditions, defaults)
                if region is not None:
                    if condition is not None:
                        region = {**region, "conditional": True, "condition": region["condition"] or condition}
                    found.setdefault(node.targets[0].id, region)
                    break
        return found

    def _module_env(self) -> dict[str, set[str]]:
        """The module's own bindings (``model = GPT()`` at the top level), which functions read."""
        if self._module_bindings is None:
            from dtype_lint.project.summary import _Scope

            scope = _Scope()
            tree = self.summarizer.tree
            self.summarizer._scope_body(tree.body, scope, owner=None, record=False,
                                        nodes=self.summarizer._nodes.get(id(tree), []))
            self._module_bindings = scope.env
        return self._module_bindings

    def _module_contexts(self) -> dict[str, dict]:
        """``_bound_contexts`` of the module's own statements (a function may enter a module's)."""
        if self._module_bound is None:
            from dtype_lint.project.summary import _Conditions

            nodes = self.summarizer._nodes.get(id(self.summarizer.tree), [])
            self._module_bound = self._bound_contexts(nodes, _Conditions(nodes), {})
        return self._module_bound

    def _region(self, call: ast.AST, conditions, defaults: dict) -> dict | None:
        """An enabled (or maybe enabled) low-precision autocast region ``call`` opens, else None."""
        if not isinstance(call, ast.Call):
            return None
        qualified = self._qualified(call.func)
        if qualified not in AUTOCAST:
            return None
        fixed, device_position, dtype_position, enabled_position = autocast_signature(qualified)
        conditional = False
        device = fixed
        if device is None:
            spelled = _argument(call, "device_type", device_position)
            device = _literal(spelled)
            if device is None and isinstance(spelled, ast.Name) and spelled.id in defaults:
                device, conditional = defaults[spelled.id], True  # ``device_type=device`` (a default)
        dtype_node = _argument(call, "dtype", dtype_position)
        if dtype_node is not None:
            dtype = _low_spelling(dtype_node)
            if dtype is None:  # ``dtype=amp_dtype`` (a name assigned low dtypes), a ternary
                if isinstance(dtype_node, ast.IfExp):
                    lows = {_low_spelling(dtype_node.body), _low_spelling(dtype_node.orelse)} - {None}
                else:
                    lows = self.summarizer.module_dtype_names.get(_dotted(dtype_node) or "", set())
                dtype = next((d for d in ("fp16", "bf16") if d in lows), None)
                conditional = conditional or dtype is not None
        else:
            dtype = SHORT.get(DEVICE_DEFAULTS.get(device or "", ""))
        if dtype is None:
            return None  # float32, unknown, or a device without a known default: stay silent
        enabled_node = _argument(call, "enabled", enabled_position)
        enabled = True if enabled_node is None else _literal(enabled_node)
        if enabled is False:
            return None
        condition = conditions.get(id(call))
        if enabled is not True:
            condition = ast.unparse(enabled_node) if condition is None else condition
        return {"dtype": dtype, "device": device, "conditional": conditional or enabled is not True
                or condition is not None, "condition": condition, "line": call.lineno,
                "text": self.summarizer._segment(call)}

    def _calls_in(self, body, scope, region: dict) -> None:
        stack = list(reversed(body))
        while stack:
            node = stack.pop()
            if isinstance(node, NESTED):
                continue
            if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                    self._qualified(i.context_expr.func) in AUTOCAST for i in node.items
                    if isinstance(i.context_expr, ast.Call)):
                continue  # its own region (a disabled one runs nothing under this one)
            if isinstance(node, ast.Call):
                callee = self._callee(node, scope)
                if callee is not None:
                    self.autocast_calls.append({**region, "refs": callee[0], "method": callee[1]})
            stack.extend(reversed(list(ast.iter_child_nodes(node))))

    def _callee(self, call: ast.Call, scope) -> tuple[list[str], str] | None:
        """(refs of what is called, the method): ``model(x)`` -> (refs of model, ``__call__``);
        ``self.net(x)`` -> (refs of the attribute, ``__call__``); ``policy.act(x)`` -> (refs of
        policy, ``act``); ``self.step(x)`` -> (the class, ``step``)."""
        func = call.func
        summarizer = self.summarizer
        if isinstance(func, ast.Name):
            refs = scope.env.get(func.id) or self._module_env().get(func.id)  # a local, or a global
            return (sorted(refs), "__call__") if refs else None
        if not isinstance(func, ast.Attribute) or func.attr in CHAIN_METHODS:
            return None
        receiver = _dotted(func.value)
        if receiver is None:
            return None
        if receiver == "self" and scope.cls is not None:
            attribute = summarizer.attrs.get(scope.cls, {}).get(func.attr)
            if attribute:
                return sorted(attribute), "__call__"
            return [scope.cls], func.attr
        refs = summarizer._refs(func.value, scope) or self._module_env().get(receiver)
        return (sorted(refs), func.attr) if refs else None

    def _framework(self, call: ast.Call, qualified: str, conditions) -> None:
        """A framework precision source that implies autocast (the catalog's ``autocast`` effect)."""
        given, chosen = {}, False
        for item in call.keywords:
            if item.arg is None:
                continue
            value = _literal(item.value)
            if value is None and isinstance(item.value, ast.IfExp):
                value, chosen = _literal(item.value.body), True  # ``fp16=True if x else False``
            if value is not None:
                given[item.arg] = value
        if not given:
            return
        for source, value, effect in catalog_effects(qualified, given):
            if effect.autocast is None:
                continue
            condition = conditions.get(id(call))
            self.framework_autocast.append({
                "framework": source.framework, "dtype": effect.autocast,
                "conditional": effect.conditional or chosen or condition is not None, "condition": condition,
                "line": call.lineno, "text": self.summarizer._segment(call),
            })

    def _runner(self, call: ast.Call, qualified: str | None, scope) -> None:
        """A call that hands a model to a framework that may run it under autocast."""
        func = call.func
        method = func.attr if isinstance(func, ast.Attribute) else None
        receiver = (_dotted(func.value) or "").rsplit(".", 1)[-1] if method is not None else ""
        for runner in RUNNERS:
            if not (qualified in runner.callables or (
                    method in runner.methods and (not runner.receivers or receiver in runner.receivers))):
                continue
            if runner.keyword is None:
                given = [a for a in call.args if not isinstance(a, ast.Starred)]
            else:
                found = _argument(call, runner.keyword, 0)
                given = [found] if found is not None else []
            refs: set[str] = set()
            for node in given:
                refs |= self.summarizer._refs(node, scope)
            if refs:
                self.runner_calls.append({"framework": runner.framework, "refs": sorted(refs),
                                          "entries": list(runner.entries), "line": call.lineno})
            return

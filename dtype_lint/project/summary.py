"""One file's summary for the project pass: what it defines, imports and casts.

Computed from CPython's ``ast`` tree (which the engine builds anyway, and which costs a fraction
of the libcst parse), once per file, and cached with the file's findings. It holds plain JSON data
and nothing that depends on another file: the project pass (``worlds.py``) joins the summaries.

A *reference* is how the file spells what a value may hold: ``"EncoderLayer"`` (an instance
made by calling it, or returned by a function of that name), ``"models.GPT"``, ``"param:model"``
(a parameter of the enclosing function). ``refs`` of an expression are the names it may hold an
instance of: ``Stage(96)``, ``nn.Sequential(Stage(96), Stage(96))`` (its contents too),
``build_model(args)``, ``layer.half()``, ``self.model`` (the class's attribute).
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right

from dtype_lint.facts.precision_sources import from_pretrained_params
from dtype_lint.ast_children import GETTERS as CHILD_GETTERS
from dtype_lint.project.astnames import dotted as _dotted
from dtype_lint.project.config_objects import loads_config, module_values
from dtype_lint.project.handoffs import HandoffFinder

FORMAT = 7  # 7: ``self.<submodule>(...)`` calls among method_calls (method "forward"); 4: call_sites, functions' end lines; 5: restores follow the cast, precision-flag conditions; 6: a rebinding through module methods keeps the parameter
# Methods that return their receiver (a module) unchanged but for device or dtype.
CHAIN_METHODS = frozenset({
    "to", "cuda", "cpu", "half", "float", "bfloat16", "double", "eval", "train", "requires_grad_",
    "type", "to_empty", "xpu", "mps",
})
LOW_CAST_METHODS = {"half": "fp16", "bfloat16": "bf16"}
# Methods that put their (last) argument into the receiver: a list or a ``*List`` holds it then.
GROWING_METHODS = frozenset({"append", "extend", "insert", "add"})
# Classmethods that build an instance of their class (``LitModel.load_from_checkpoint(path)``).
INSTANCE_CLASSMETHODS = frozenset({"from_pretrained", "load_from_checkpoint", "from_config"})
LOW_SPELLINGS = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16"}
MAX_REF_DEPTH = 6
# Libraries whose functions are no function of the project: their call sites are not recorded.
LIBRARIES = frozenset({
    "torch", "numpy", "math", "os", "sys", "json", "re", "time", "random", "logging", "typing", "functools",
    "itertools", "collections", "transformers", "diffusers", "accelerate", "einops", "scipy", "PIL", "cv2",
    "torchvision", "torchaudio", "safetensors", "tqdm", "pathlib", "argparse",
})
# The expressions a dtype variable is assigned (``torch.float16``, a ternary, a table lookup):
# only these are searched for a low dtype spelling.
DTYPE_EXPRESSIONS = (ast.Attribute, ast.Constant, ast.IfExp, ast.Dict, ast.Subscript, ast.BoolOp)


def _low_spelling(node: ast.AST) -> str | None:
    """``torch.float16`` / ``torch.half`` / ``"bfloat16"`` -> fp16 / bf16."""
    if isinstance(node, ast.Attribute):
        return LOW_SPELLINGS.get(node.attr)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return LOW_SPELLINGS.get(node.value)
    return None


class _Scope:
    """Bindings of one function (or the module): name -> refs, flow-insensitive."""

    def __init__(self, params: tuple[str, ...] = (), cls: str | None = None) -> None:
        self.env: dict[str, set[str]] = {name: {f"param:{name}"} for name in params}
        self.cls = cls


class Summarizer:
    low_spelling = staticmethod(_low_spelling)

    def __init__(self, tree: ast.Module, text: str, flow_calls: dict | None = None) -> None:
        self.tree = tree
        # dotted name -> its calls' argument dtypes, in source order (call_sites.flow_arguments)
        self.flow_calls = flow_calls or {}
        self.call_sites: list[dict] = []  # calls that pass a risky dtype (or a parameter) on
        self.text = text
        self.lines = text.splitlines()
        self._nodes: dict[int, list[ast.AST]] = {}  # function (or the module) -> the nodes of its scope
        self.imports: dict[str, list[str]] = {}
        self.classes: dict[str, dict] = {}
        self.functions: dict[str, dict] = {}
        self.casts: list[dict] = []
        # class -> attribute -> refs (``self.model = TinyUNet()`` in any method)
        self.attrs: dict[str, dict[str, set[str]]] = {}
        self.module_dtype_names: dict[str, set[str]] = {}
        self.returned_casts: dict[str, list[dict]] = {}  # function -> the low casts it returns
        self.arguments: list[dict] = []  # calls given a low dtype or a true fp16 flag by keyword
        self.method_calls: list[dict] = []  # ``self.evaluator.evaluate(...)``: calls of an instance's method
        self.saves: list[dict] = []  # low-precision checkpoints ``torch.save`` writes (checkpoints.py)
        self.passes: list[dict] = []  # calls of imported functions given instances (by their refs)
        self.parts: list[dict] = []  # submodules given a low dtype apart from their model
        self.effect_calls: list[dict] = []  # ``model.init_weights()``: methods run for their effects
        self.bound_forwards: list[dict] = []  # ``module.forward = fn.__get__(module)``: fn runs as a forward
        from dtype_lint.project.autocast_summary import AutocastSummary  # it reads this module's helpers

        self.autocast = AutocastSummary(self)  # what runs under autocast (autocast_summary.py)
        self._top_functions: set[str] = set()

    # -- entry ------------------------------------------------------------------------------------
    def run(self) -> dict:
        # one walk of the whole tree: imports, module-level dtype names, the calls made
        everything, self._nodes = _scoped_walk(self.tree)
        self._calls = [node for node in everything if type(node) is ast.Call]
        # the calls by line, for each class's calls (a scan of all calls per class was quadratic)
        self._calls_by_line = sorted(self._calls, key=lambda call: call.lineno)
        self._call_lines = [call.lineno for call in self._calls_by_line]
        self._has_save = any(  # most files save nothing: skip the per-scope search
            isinstance(n.func, (ast.Attribute, ast.Name)) and (getattr(n.func, "attr", None) or getattr(n.func, "id", None))
            in ("save", "save_file") for n in self._calls)
        self._flow_sites = self._pair_flow_calls()
        self._imports(node for node in everything if type(node) in (ast.Import, ast.ImportFrom))
        self._collect_dtype_names(everything, self.module_dtype_names)
        self.module_scope = _Scope()
        self.handoffs = HandoffFinder(self, everything)
        module_scope = self.module_scope
        self._top_functions = {s.name for s in self.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for statement in self.tree.body:
            if isinstance(statement, ast.ClassDef):
                self._class(statement)
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(statement, None)
        self._scope_body(self.tree.body, module_scope, owner=None, nodes=self._nodes.get(id(self.tree), []))
        return {
            "format": FORMAT,
            "imports": self.imports,
            "classes": self.classes,
            "functions": self.functions,
            "casts": self.casts,
            "returned_casts": self.returned_casts,
            "arguments": self.arguments,
            "saves": self.saves,
            "method_calls": sorted(self.method_calls, key=lambda c: (c["name"], c["refs"])),
            "settings": self.handoffs.module_configs,
            "passes": self.passes,
            "config_loads": loads_config(self._calls, self.imports),
            "values": module_values(self.tree),
            "parts": self.parts,
            "effect_calls": self.effect_calls,
            "bound_forwards": self.bound_forwards,
            "call_sites": sorted(self.call_sites, key=lambda site: (site["line"], site["column"])),
            "calls": sorted({
                name for name in (_dotted(n.func) for n in self._calls)
                if name and name.split(".")[0] in self.imports
            }),
            **self.autocast.as_dict(),
        }

    # -- imports ----------------------------------------------------------------------------------
    def _imports(self, nodes) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self._bind(alias.asname, alias.name)
                    else:
                        self._bind(alias.name.split(".")[0], alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                base = "." * (node.level or 0) + (node.module or "")
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    joined = f"{base}.{alias.name}" if base and not base.endswith(".") else f"{base}{alias.name}"
                    self._bind(alias.asname or alias.name, joined)

    def _bind(self, local: str, qualified: str) -> None:
        targets = self.imports.setdefault(local, [])
        if qualified not in targets:
            targets.append(qualified)

    # -- definitions ------------------------------------------------------------------------------
    def _class(self, node: ast.ClassDef) -> None:
        bases = [name for name in (_dotted(base) for base in node.bases) if name]
        methods: dict[str, list[int]] = {}
        self.attrs.setdefault(node.name, {})
        # attributes first (``self.model = ...`` in __init__), so other methods see them
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods[item.name] = [item.lineno, item.end_lineno or item.lineno]
        for item in node.body:  # attributes first, so every method sees them
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(item, node.name, record=False)
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(item, node.name)
        first, last = node.lineno, node.end_lineno or node.lineno
        inside = self._calls_by_line[bisect_left(self._call_lines, first):bisect_right(self._call_lines, last)]
        contains = sorted({
            name for name in (_dotted(call.func) for call in inside) if name
            and not name.startswith("self.") and name.split(".")[-1] not in CHAIN_METHODS
        })
        self.classes[node.name] = {
            "line": node.lineno,
            "end": node.end_lineno or node.lineno,
            "bases": bases,
            "methods": methods,
            "contains": contains,
            "attrs": {attr: sorted(refs) for attr, refs in sorted(self.attrs[node.name].items())},
            # ``requires_grad_(False)`` somewhere in it: a low part may be a frozen one (no gradients)
            "freezes": any("requires_grad" in line for line in self.lines[first - 1: last]),
        }

    def _function(self, node, cls: str | None, record: bool = True) -> None:
        args = node.args
        params = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
        scope = _Scope(params, cls)
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            annotated = _dotted(arg.annotation) if arg.annotation is not None else None
            if annotated is not None:
                scope.env[arg.arg].add(annotated)  # ``def infer(model: Detector)``
        nodes = self._nodes.get(id(node), [])
        returns: set[str] = set()
        positional = [*args.posonlyargs, *args.args]
        defaults = {a.arg: d.value for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults)
                    if isinstance(d, ast.Constant) and isinstance(d.value, str)}
        first_cast = len(self.casts)
        self._scope_body(node.body, scope, owner=node.name if cls is None else f"{cls}.{node.name}",
                         returns=returns, record=record, nodes=nodes, defaults=defaults)
        for cast in self.casts[first_cast:]:
            if _precision_flag(nodes, cast, params):
                cast["precision_flag"] = True
            receiver = cast["text"].split(".", 1)[0]
            if f"param:{receiver}" not in cast["refs"]:
                continue
            if _bound_before(nodes, receiver, cast["line"]):
                cast["rebound"] = True  # ``model = torch.load(...)`` first: not the caller's module
            elif len(cast["refs"]) > 1:
                cast["param_at_cast"] = receiver  # rebound only later (``model = load(...)`` in another branch)
        if record:
            key = node.name if cls is None else f"{cls}.{node.name}"
            self.functions[key] = {"line": node.lineno, "end": node.end_lineno or node.lineno, "params": list(params),
                                   "returns": sorted(returns), "calls": self._function_calls(nodes)}
            restored = _restored_params(nodes, params)
            if restored:
                self.functions[key]["restored"] = restored
            switched_on = _true_defaults(args)
            if switched_on:
                self.functions[key]["true_defaults"] = switched_on

    def _function_calls(self, nodes) -> list[str]:
        """The project functions a function may call: names of this file's functions or imported
        (``eager_attention_forward(...)``, ``utils.mask(...)``), and its class's methods
        (``self.attend(...)``), resolved by the project pass."""
        found = set()
        for node in nodes:
            if type(node) is ast.Call:
                name = _dotted(node.func)
                head = name.split(".")[0] if name else ""
                if (head == "self" and name.count(".") == 1) or head in self._top_functions or (
                        head in self.imports and not any(
                        t.split(".")[0] in LIBRARIES for t in self.imports[head])):
                    found.add(name)
        return sorted(found)

    # -- bindings and casts ---------------------------------------------------------------------
    def _collect_dtype_names(self, nodes, into: dict[str, set[str]]) -> None:
        """Names assigned an expression that spells a low dtype (``dtype = torch.float16 if ...``)."""
        for node in nodes:
            if type(node) is ast.Assign and len(node.targets) == 1 and type(node.value) in DTYPE_EXPRESSIONS:
                target = _dotted(node.targets[0])
                if target is None:
                    continue
                lows = {_low_spelling(n) for n in ast.walk(node.value)} - {None}
                if lows:
                    into.setdefault(target, set()).update(lows)

    def _scope_body(self, statements, scope: _Scope, owner: str | None, returns: set | None = None,
                    record: bool = True, nodes: list = (), defaults: dict | None = None) -> None:
        # the nodes that bind, in order (a scope's nodes are all its expressions: filtered once)
        binding = [node for node in nodes if type(node) in BINDING_NODES]
        for _ in range(2):  # twice: a name bound from a later-bound name in a loop
            for node in binding:
                if isinstance(node, ast.Assign):
                    pairs = _unpacked(node)
                    if pairs:  # ``model, ema = Net(), Net()``: item by item
                        for target, value in pairs:
                            self._assign(target, self._refs(value, scope), scope)
                        continue
                    refs = self._refs(node.value, scope)
                    for target in node.targets:
                        self._assign(target, refs, scope)
                elif isinstance(node, (ast.AnnAssign,)) and node.value is not None:
                    self._assign(node.target, self._refs(node.value, scope), scope)
                elif type(node) is ast.Call and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in GROWING_METHODS and node.args:
                    # ``processors.append(StopOnTokens())``: the list holds it too
                    self._assign(node.func.value, self._refs(node.args[-1], scope), scope)
        if returns is not None:
            for node in nodes:
                if type(node) is ast.Return and node.value is not None:
                    returns.update(self._refs(node.value, scope))
        if not record:
            return
        self._record_call_sites(nodes, scope, owner)
        conditions = _Conditions(nodes)
        self.autocast.scope(nodes, scope, conditions, defaults or {})
        cast_names: dict[str, dict] = {}  # local name -> the low cast it holds (first one)
        calls = []
        method = owner.split(".", 1)[1] if owner and scope.cls and "." in owner else None
        for node in nodes:
            if type(node) is ast.Expr and type(node.value) is ast.Call:
                self._effect_call(node.value, scope, conditions)
            elif type(node) is ast.Assign and len(node.targets) == 1:
                if scope.cls is not None:
                    self._built_part(node, scope, method, conditions)
                self._bound_forward(node, owner)
            if isinstance(node, ast.Call):
                calls.append(node)
                self._part_cast(node, scope, method, conditions)
                self._cast(node, scope, owner, conditions)
                self._low_arguments(node, conditions)
                self._method_call(node, scope)
                cast = self._cast_of_name(node, scope, conditions)
                if cast is not None:
                    cast_names.setdefault(cast[0], cast[1])
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1:
                target = _dotted(node.targets[0])
                cast = self._cast_of_name(node.value, scope, conditions, anything=True)
                if target is not None and cast is not None:
                    cast_names.setdefault(target, cast[1])
        for node in calls:  # after the casts: ``lm.generate(...)`` asks what ``lm`` holds
            self._passes(node, scope)
            for handoff in self.handoffs.casts(node, scope, cast_names):
                condition = conditions.get(id(node))
                self.casts.append({
                    **handoff, "conditional": handoff["conditional"] or condition is not None,
                    "condition": condition, "line": node.lineno, "text": self._segment(node),
                    "owner": owner, "class": scope.cls,
                })
        if self._has_save:
            from dtype_lint.project.checkpoints import saves_in  # checkpoints.py reads this module's helpers

            self.saves.extend(saves_in(self, nodes, scope, cast_names, conditions))
        built = {name: cast for name, cast in cast_names.items() if not cast.get("loaded")}
        if returns is not None and owner is not None and built:
            returned = self._returned_casts(nodes, built)
            if returned:
                self.returned_casts[owner] = returned
        if scope.cls is not None and owner == f"{scope.cls}.__init__":
            # ``self.half()`` / ``if args.half: self.model.half()`` in ``__init__``: every instance
            # is built cast (only in part for a submodule): its callers in other files get it so
            self_casts = [{**cast, "position": -1, "length": 0, "partial": name != "self"}
                          for name, cast in sorted(built.items())
                          if name == "self" or (name.startswith("self.") and name.count(".") == 1)]
            if self_casts:
                self.returned_casts[scope.cls] = self_casts[:1]

    # -- call sites: what calls pass their callees (see call_sites.py and project/contexts.py) --------
    def _pair_flow_calls(self) -> dict[int, dict]:
        """id(ast call) -> its flow site: the k-th call of a dotted name in CPython's tree is the
        k-th in libcst's (both in source order); a name whose counts differ is left out."""
        if not self.flow_calls:
            return {}
        by_name: dict[str, list[ast.Call]] = {}
        for call in self._calls:
            name = _dotted(call.func)
            if name in self.flow_calls:
                by_name.setdefault(name, []).append(call)
        paired: dict[int, dict] = {}
        for name, calls in by_name.items():
            sites = self.flow_calls[name]
            if len(calls) != len(sites):
                continue
            calls.sort(key=lambda call: (call.lineno, call.col_offset))
            for call, site in zip(calls, sites):
                if site:
                    paired[id(call)] = site
        return paired

    def _record_call_sites(self, nodes, scope: _Scope, owner: str | None) -> None:
        assigned = None
        for node in nodes:
            if type(node) is not ast.Call:
                continue
            site = self._flow_sites.get(id(node))
            passes = []
            name = _dotted(node.func)
            targets = self.imports.get(name.split(".")[0], ()) if name is not None else ()
            if targets and all(target.split(".")[0] in LIBRARIES for target in targets):
                continue
            if owner is not None and name is not None and name.split(".")[0] in self.imports and scope.env:
                # a parameter handed on unchanged to another file's function: contexts chain through it
                if assigned is None:
                    assigned = {n.id for n in nodes if type(n) is ast.Name and type(n.ctx) is ast.Store}
                positional = [(index, arg) for index, arg in enumerate(node.args)]
                if any(isinstance(arg, ast.Starred) for _, arg in positional):
                    positional = positional[: next(i for i, (_, a) in enumerate(positional) if isinstance(a, ast.Starred))]
                for at, arg in [*positional, *((k.arg, k.value) for k in node.keywords if k.arg)]:
                    if type(arg) is ast.Name and arg.id not in assigned and f"param:{arg.id}" in scope.env.get(arg.id, ()):
                        passes.append({"at": at, "param": arg.id})
            if site is None and not passes:
                continue
            callee = self._callee(node.func, name, scope)
            if callee is None:
                continue
            self.call_sites.append({
                "callee": callee, "owner": owner, "line": node.lineno, "column": node.col_offset,
                "args": site["args"] if site else [], "autocast": site["autocast"] if site else None,
                "passes": passes,
            })

    def _callee(self, func: ast.AST, name: str | None, scope: _Scope) -> dict | None:
        """``{"name": "ssim"}`` (a function, or ``Cls.method``) or ``{"receiver": refs, "method":
        "forward"}`` (a method of whatever instance the receiver holds)."""
        if name is None:
            return None
        if isinstance(func, ast.Name):
            if name in scope.env:
                refs = sorted(r for r in scope.env[name] if not r.startswith("param:"))
                return {"receiver": refs, "method": "forward"} if refs else None
            return {"name": name}
        head, _, rest = name.rpartition(".")
        if head == "self" and scope.cls is not None:
            refs = self.attrs.get(scope.cls, {}).get(rest)
            if refs:
                return {"receiver": sorted(refs), "method": "forward"}
            return {"name": f"{scope.cls}.{rest}"}
        if name.split(".")[0] in self.imports and name.split(".")[0] not in scope.env:
            return {"name": name}
        if rest in CHAIN_METHODS:
            return None
        refs = sorted(r for r in self._refs(func.value, scope) if not r.startswith("param:"))
        return {"receiver": refs, "method": rest} if refs else None

    def _segment(self, node: ast.AST) -> str:
        """The node's source, shortened (``ast.get_source_segment`` splits the whole file each call)."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        if first == last:
            text = self.lines[first][node.col_offset: node.end_col_offset]
        else:
            text = " ".join([self.lines[first][node.col_offset:], *self.lines[first + 1: last],
                             self.lines[last][: node.end_col_offset]])
        return _short(text)

    def _passes(self, call: ast.Call, scope: _Scope) -> None:
        """``utility.make_optimizer(args, model)``: an imported function given values that may be
        instances of project classes (a helper in another file then runs on them)."""
        name = _dotted(call.func)
        if name is None or name.split(".")[0] not in self.imports or name.split(".")[-1] in CHAIN_METHODS:
            return
        given = []
        for slot, value in [*enumerate(call.args), *((k.arg, k.value) for k in call.keywords if k.arg)]:
            if isinstance(value, ast.Starred):
                break
            # instances of classes (``Model(args)``, ``nets.Upscaler(...)``): capitalised names, so
            # the summary does not carry every ``torch.cat(...)`` argument
            refs = sorted(r for r in self._refs(value, scope) if r.rsplit(".", 1)[-1][:1].isupper()
                          and not r.startswith("param:"))
            if refs:
                given.append([slot, refs])
        if given:
            self.passes.append({"ref": name, "args": given, "line": call.lineno})

    def _low_arguments(self, call: ast.Call, conditions: "_Conditions") -> None:
        """``AlignRestore(dtype=torch.float16)``: a constructor (or function) given a low dtype by
        keyword (``torch.float16``, ``torch.bfloat16``; strings are too often config values)."""
        name = _dotted(call.func)
        if name is None or name.split(".")[-1] in CHAIN_METHODS:
            return
        given: dict[str, str] = {}
        calls: dict[str, str] = {}  # keyword -> the function whose result it is given (``w=weights(y)``)
        for keyword in call.keywords:
            if keyword.arg is None:
                continue
            low = _low_spelling(keyword.value) if not isinstance(keyword.value, ast.Constant) else None
            if low is not None:
                given[keyword.arg] = low
            elif isinstance(keyword.value, ast.Call) and name[:1].isupper() and name.split(".")[0] in self.imports:
                called = _dotted(keyword.value.func)
                if called is not None and not called.startswith("self.") and called.split(".")[-1] not in CHAIN_METHODS:
                    calls[keyword.arg] = called
        if given or calls:
            self.arguments.append({
                "ref": name, "keywords": given, "line": call.lineno, "conditional": id(call) in conditions,
                "text": self._segment(call), **({"calls": calls} if calls else {}),
            })

    def _method_call(self, call: ast.Call, scope: _Scope) -> None:
        """``self.evaluator.evaluate(model)`` / ``evaluator.evaluate(model)``: a method of what the
        receiver may hold (its refs), for the helpers of other files (helpers.py)."""
        func = call.func
        if not isinstance(func, ast.Attribute) or not (call.args or call.keywords) or func.attr in CHAIN_METHODS:
            return
        name = _dotted(func)
        if name is None or name.count(".") > 3:
            return
        if name.count(".") == 1 and name.startswith("self.") and scope.cls is not None:
            # ``self.time_proj(t)``: a submodule called, its class's ``forward`` runs (what it
            # returns, for the caller's flow: worlds.values)
            held = sorted(r for r in self.attrs.get(scope.cls, {}).get(func.attr, ()) if r[:1].isupper())
            entry = {"name": name, "refs": held, "method": "forward"}
            if held and entry not in self.method_calls:
                self.method_calls.append(entry)
            return
        refs = sorted(r for r in self._refs(func.value, scope) if not r.startswith("param:"))
        entry = {"name": name, "refs": refs, "method": func.attr}
        if refs and entry not in self.method_calls:
            self.method_calls.append(entry)

    def _cast_of_name(self, call: ast.Call, scope: _Scope, conditions: "_Conditions", anything: bool = False):
        """``(name, cast)`` for ``name.half()`` / ``name.to(torch.float16)`` (``anything``: any
        receiver, the name being the assignment's target)."""
        while isinstance(call.func, ast.Attribute) and call.func.attr in CHAIN_METHODS \
                and self._cast_dtype(call, scope) is None and isinstance(call.func.value, ast.Call):
            call = call.func.value  # ``AutoModel.from_pretrained(..., torch_dtype=torch.float16).eval()``
        cast = self._cast_dtype(call, scope)
        if cast is None or cast[0].startswith("param:") or not isinstance(call.func, ast.Attribute):
            return None
        name = _dotted(call.func.value)
        if name is None and not anything:
            return None
        condition = conditions.get(id(call))
        return name, {
            "dtype": cast[0], "conditional": cast[1] or condition is not None, "condition": condition,
            "line": call.lineno, "text": self._segment(call),
            # a library model loaded in low precision: it may cast its own inputs, and keep some
            # modules float32; only framework callbacks (``generate``) are told of it
            **({"loaded": True} if call.func.attr == "from_pretrained" else {}),
        }

    @staticmethod
    def _returned_casts(nodes, cast_names: dict) -> list[dict]:
        """What a function returns that it cast: the whole value (position -1) or a tuple item."""
        found: list[dict] = []
        for node in nodes:
            if not isinstance(node, ast.Return) or node.value is None:
                continue
            value = node.value
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and value.func.attr in CHAIN_METHODS:
                value = value.func.value  # ``return model.cuda()``
            if isinstance(value, ast.Tuple):
                for position, element in enumerate(value.elts):
                    name = _dotted(element)
                    if name in cast_names:
                        found.append({**cast_names[name], "position": position, "length": len(value.elts)})
            else:
                name = _dotted(value)
                if name in cast_names:
                    found.append({**cast_names[name], "position": -1, "length": 0})
        return found

    def _assign(self, target: ast.AST, refs: set[str], scope: _Scope) -> None:
        if not refs:
            return
        name = _dotted(target)
        if name is None:
            if isinstance(target, (ast.Tuple, ast.List)):
                return
            return
        if name.startswith("self.") and scope.cls is not None and name.count(".") == 1:
            self.attrs.setdefault(scope.cls, {}).setdefault(name[5:], set()).update(refs)
        scope.env.setdefault(name, set()).update(refs)

    def _refs(self, node: ast.AST, scope: _Scope, depth: int = 0) -> set[str]:
        if depth > MAX_REF_DEPTH or node is None:
            return set()
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in CHAIN_METHODS:
                return self._refs(func.value, scope, depth + 1)
            found: set[str] = set()
            name = _dotted(func)
            if isinstance(func, ast.Attribute) and func.attr in INSTANCE_CLASSMETHODS:
                name = _dotted(func.value)
            if name is not None and not name.startswith("self."):
                found.add(name)
            elif name is not None and scope.cls is not None:
                found.add(f"{scope.cls}.{name[5:]}")  # ``self.build()``: a method's result
            for arg in (*node.args, *(k.value for k in node.keywords)):
                found |= self._refs(arg, scope, depth + 1)
            return found
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = _dotted(node)
            if name is None:
                return set()
            if name in scope.env:
                return set(scope.env[name])
            if name.startswith("self.") and scope.cls is not None:
                return set(self.attrs.get(scope.cls, {}).get(name[5:], ()))
            return set()
        if isinstance(node, ast.IfExp):
            return self._refs(node.body, scope, depth + 1) | self._refs(node.orelse, scope, depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            found = set()
            for element in node.elts:
                found |= self._refs(element, scope, depth + 1)
            return found
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self._refs(node.elt, scope, depth + 1)
        if isinstance(node, ast.Starred):
            return self._refs(node.value, scope, depth + 1)
        return set()

    def _cast_dtype(self, call: ast.Call, scope: _Scope) -> tuple[str, bool] | None:
        """(low dtype, only in some configurations) of a module cast, else None."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return None
        if func.attr in LOW_CAST_METHODS:
            return LOW_CAST_METHODS[func.attr], False
        if func.attr == "from_pretrained":
            # the loaded parameters' dtype (the catalog's from_pretrained entries); a model may
            # keep some modules float32 (``_keep_in_fp32_modules``): a reachable configuration
            for keyword in call.keywords:
                low = _low_spelling(keyword.value)
                spelled = {"fp16": "float16", "bf16": "bfloat16"}.get(low) if keyword.arg in ("torch_dtype", "dtype") \
                    else (keyword.value.value if isinstance(keyword.value, ast.Constant) else None)
                loaded = from_pretrained_params(keyword.arg or "", spelled)
                if loaded is not None:
                    return loaded[0], True
            return None
        if func.attr not in ("to", "type"):
            return None
        for arg in (*call.args, *(k.value for k in call.keywords if k.arg in ("dtype", None))):
            low = _low_spelling(arg)
            if low is not None:
                return low, False
            name = _dotted(arg)
            if name is not None:
                lows = self.module_dtype_names.get(name)
                if lows:
                    return sorted(lows)[0], True
                if f"param:{name}" in scope.env.get(name, ()):
                    return f"param:{name}", True
        return None

    # -- parts: submodules with a dtype of their own ---------------------------------------------
    def _owner_of(self, node: ast.AST, scope: _Scope) -> tuple[dict, list[str]] | None:
        """Who holds the attribute chain ``node`` (``model.backbone``, ``self.model.encoder``):
        ({"class": C} or {"refs": [...]}, the attributes), or None."""
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not attrs or not isinstance(node, ast.Name):
            return None
        attrs.reverse()
        if node.id == "self" and scope.cls is not None:
            return {"class": scope.cls, "refs": []}, attrs
        refs = sorted(ref for ref in self._refs(node, scope) if not ref.startswith("param:"))
        return ({"class": None, "refs": refs}, attrs) if refs else None

    def _part(self, held: dict, attrs: list[str], dtype: str, conditional: bool, condition, node, method,
              kind: str) -> None:
        self.parts.append({
            **held, "attrs": attrs, "dtype": dtype, "conditional": conditional or condition is not None,
            "condition": condition, "line": node.lineno, "text": self._segment(node),
            "method": method if held["class"] else None, "kind": kind,
        })

    def _part_cast(self, call: ast.Call, scope: _Scope, method, conditions: "_Conditions") -> None:
        """``model.backbone.half()``, ``self.wte.to(torch.bfloat16)``: one attribute cast."""
        cast = self._cast_dtype(call, scope)
        if cast is None or cast[0].startswith("param:"):
            return
        owner = self._owner_of(call.func.value, scope)
        if owner is not None:
            self._part(*owner, cast[0], cast[1], conditions.get(id(call)), call, method, "cast")

    def _built_part(self, node: ast.Assign, scope: _Scope, method, conditions: "_Conditions") -> None:
        """``self.head = nn.Linear(d, n, dtype=torch.bfloat16)``, or such a layer inside
        ``nn.Sequential(...)`` / ``nn.ModuleList([...])``: a submodule built in a low dtype."""
        target = _dotted(node.targets[0])
        value = node.value
        if target is None or not target.startswith("self.") or target.count(".") != 1 or type(value) is not ast.Call:
            return
        name = _dotted(value.func)
        if name is None or not name.split(".")[-1][:1].isupper():
            return  # a module or parameter constructor, not a tensor factory (a buffer-like attribute)
        for inner in ast.walk(value):
            if type(inner) is not ast.Call:
                continue
            for keyword in inner.keywords:
                low = _low_spelling(keyword.value) if keyword.arg == "dtype" else None
                if low is None and keyword.arg == "dtype" and _dotted(keyword.value) in self.module_dtype_names:
                    low = sorted(self.module_dtype_names[_dotted(keyword.value)])[0]
                if low is not None and not isinstance(keyword.value, ast.Constant):
                    self._part({"class": scope.cls, "refs": []}, [target[5:]], low, False,
                               conditions.get(id(inner)), inner, method, "built")
                    return

    def _bound_forward(self, node: ast.Assign, owner: str | None) -> None:
        """``module.forward = fn.__get__(module)`` / ``types.MethodType(fn, module)``: a function
        of the program monkeypatched in as the forward of the modules of a model, which runs it
        with ``self`` in the model's precision (the casts of the same function)."""
        target, value = node.targets[0], node.value
        if not (isinstance(target, ast.Attribute) and target.attr == "forward" and type(value) is ast.Call):
            return
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr == "__get__":
            bound = _dotted(func.value)
        elif (_dotted(func) or "").split(".")[-1] == "MethodType" and value.args:
            bound = _dotted(value.args[0])
        else:
            return
        if bound is not None:
            self.bound_forwards.append({"function": bound, "line": node.lineno, "owner": owner})

    def _effect_call(self, call: ast.Call, scope: _Scope, conditions: "_Conditions") -> None:
        """A statement ``model.init_weights()`` / ``self.prepare()``: a method run for its effects on
        the instance (the parts it casts apply)."""
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr in CHAIN_METHODS:
            return
        if isinstance(func.value, ast.Name) and func.value.id == "self" and scope.cls is not None:
            held = {"class": scope.cls, "refs": []}
        else:
            refs = sorted(ref for ref in self._refs(func.value, scope) if not ref.startswith("param:"))
            if not refs:
                return
            held = {"class": None, "refs": refs}
        self.effect_calls.append({**held, "method": func.attr, "line": call.lineno,
                                  "conditional": id(call) in conditions})

    def _cast(self, call: ast.Call, scope: _Scope, owner: str | None, conditions: "_Conditions") -> None:
        cast = self._cast_dtype(call, scope)
        if cast is None:
            return
        dtype, conditional = cast
        receiver = call.func.value
        if call.func.attr == "from_pretrained":
            refs = {_dotted(receiver)} - {None}  # ``MyModel.from_pretrained(...)``: a class of the project
        elif isinstance(receiver, ast.Name) and receiver.id == "self" and scope.cls is not None:
            if owner != f"{scope.cls}.__init__":
                # a cast routine of its own (``def to_bf16(self): self.to(torch.bfloat16)``) usually
                # goes on to keep some parameters float32: not a world of the whole class
                return
            refs = {scope.cls}  # ``self.half()`` in ``__init__``: every instance, the class itself
        else:
            refs = self._refs(receiver, scope)
        if not refs:
            return
        condition = conditions.get(id(call))
        self.casts.append({
            "refs": sorted(refs),
            "dtype": dtype,
            "conditional": conditional or condition is not None,
            "condition": condition,
            "line": call.lineno,
            "text": self._segment(call),
            "owner": owner,
            "class": scope.cls,
        })


FLOAT32_SPELLINGS = frozenset({"float32", "float"})


def _bound_before(nodes, name: str, line: int) -> bool:
    """``name`` is (re)bound before ``line`` on a path that reaches it (not in the other arm of
    an ``if``: ``if model is None: model = load(...)`` ... ``else: model.half()``)."""
    at = ((line, 0), (line, 0))
    branches = [(body, orelse) for body, orelse in _branch_spans(nodes)
                if body[0][0] <= line <= body[1][0] or orelse[0][0] <= line <= orelse[1][0]]
    for node in nodes:
        kind = type(node)
        if kind in (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr) and node.lineno < line:
            targets = node.targets if kind is ast.Assign else [getattr(node, "target", None)] if kind is not ast.With \
                else [item.optional_vars for item in node.items]
            if not any(isinstance(n, ast.Name) and n.id == name for t in targets if t is not None for n in ast.walk(t)):
                continue
            if kind is ast.Assign and _same_module(node.value, name):
                continue  # ``model = model.eval()``: a module's chain methods return the module itself
            if not any(_on_lines(_span(node), one) and _on_lines(at, other) or _on_lines(_span(node), other)
                       and _on_lines(at, one) for one, other in branches):
                return True
    return False


def _same_module(value, name: str) -> bool:
    """``value`` is ``name`` through module methods that return the module itself
    (``model.eval()``, ``model.to(device).train()``): binding it keeps the caller's object."""
    while type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr in CHAIN_METHODS:
        value = value.func.value
    return type(value) is ast.Name and value.id == name


def _on_lines(span, outer) -> bool:
    return outer[0][0] <= span[0][0] and span[1][0] <= outer[1][0]


PRECISION_FLAG = re.compile(r"(?:^|_)(?:half|fp16|bf16|amp)(?:$|_)", re.IGNORECASE)


def _precision_flag(nodes, cast: dict, params) -> bool:
    """The cast runs under a local precision switch of the function (``half = device.type !=
    'cpu'`` ... ``if half: model.half()``): on in the runs it is written for, whoever calls. A
    switch last set to a literal off (``half = False``) before the cast keeps it off."""
    name = cast.get("condition")
    if not name or not name.isidentifier() or name in params or not PRECISION_FLAG.search(name):
        return False
    before = [n for n in nodes if type(n) is ast.Assign and n.lineno < cast["line"]
              and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
    if not before:
        return False
    value = max(before, key=lambda n: n.lineno).value
    return not (isinstance(value, ast.Constant) and value.value in (False, None, 0))


def _true_defaults(args: ast.arguments) -> list[str]:
    """Parameters that default to ``True`` (``half=True``): a caller that leaves them out switches them on."""
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return sorted(a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value is True)


def _restored_params(nodes, params) -> list[str]:
    """Parameters the function casts back to float32 (``model.float()``, ``model.to(torch.float32)``):
    a helper that halves its model and restores it leaves the caller's model as it was. A float32
    cast restores only when it runs after the low cast: the other arm of the same choice
    (``model.half() if half else model.float()``, ``if half: ... else: model.float()``) is the
    configuration without the cast, not its undoing."""
    restoring = float32_casts(nodes, params)
    if not restoring:
        return []
    branches = _branch_spans(nodes)
    found = []
    for name in restoring:
        backs = [_span(n) for n in _casts_of(nodes, name, _is_float32_cast)]
        lows = [_span(n) for n in _casts_of(nodes, name, _is_low_cast)]
        if all(any(back[0] >= low[1] and not _exclusive(branches, low, back) for back in backs) for low in lows):
            found.append(name)
    return found


def _span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    return (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)


def _casts_of(nodes, name: str, kind) -> list[ast.Call]:
    return [n for n in nodes if type(n) is ast.Call and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name) and n.func.value.id == name and kind(n)]


def _is_float32_cast(call: ast.Call) -> bool:
    return call.func.attr == "float" or call.func.attr in ("to", "type") and any(
        isinstance(a, ast.Attribute) and a.attr in FLOAT32_SPELLINGS for a in (*call.args, *(k.value for k in call.keywords)))


def _is_low_cast(call: ast.Call) -> bool:
    return call.func.attr in LOW_CAST_METHODS or call.func.attr in ("to", "type") and any(
        _low_spelling(a) is not None or isinstance(a, ast.Name) and "dtype" in a.id
        for a in (*call.args, *(k.value for k in call.keywords)))


def _branch_spans(nodes) -> list[tuple]:
    """(body span, orelse span) of each ``if`` and ternary among ``nodes``."""
    spans = []
    for node in nodes:
        if type(node) is ast.If and node.orelse:
            spans.append(((_span(node.body[0])[0], _span(node.body[-1])[1]),
                          (_span(node.orelse[0])[0], _span(node.orelse[-1])[1])))
        elif type(node) is ast.IfExp:
            spans.append((_span(node.body), _span(node.orelse)))
    return spans


def _exclusive(branches, one, other) -> bool:
    """``one`` and ``other`` sit in the two arms of one ``if``/ternary: never both run."""
    def within(span, outer):
        return outer[0] <= span[0] and span[1] <= outer[1]
    return any(within(one, body) and within(other, orelse) or within(one, orelse) and within(other, body)
               for body, orelse in branches)


def float32_casts(nodes, names=None) -> list[str]:
    """The plain names (among ``names``, if given) that ``nodes`` cast to float32."""
    found = set()
    for node in nodes:
        if type(node) is not ast.Call or not isinstance(node.func, ast.Attribute):
            continue
        receiver = node.func.value
        if not isinstance(receiver, ast.Name) or names is not None and receiver.id not in names:
            continue
        attr = node.func.attr
        if attr == "float" or attr in ("to", "type") and any(
                isinstance(a, ast.Attribute) and a.attr in FLOAT32_SPELLINGS
                for a in (*node.args, *(k.value for k in node.keywords))):
            found.add(receiver.id)
    return sorted(found)


def _unpacked(node: ast.Assign) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs of ``a, b = x, y``; empty for any other assignment."""
    target, value = node.targets[0], node.value
    if len(node.targets) == 1 and isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
        return list(zip(target.elts, value.elts))
    return []


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
BINDING_NODES = frozenset({ast.Assign, ast.AnnAssign, ast.Call})  # what _scope_body's bindings read
NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _scoped_walk(tree: ast.Module) -> tuple[list[ast.AST], dict[int, list[ast.AST]]]:
    """Every node, and the nodes of each scope (the module, each function) without those of
    the definitions nested in it, in one walk. A class's statements belong to no scope."""
    everything: list[ast.AST] = []
    scopes: dict[int, list[ast.AST]] = {id(tree): []}
    stack: list[tuple[ast.AST, list | None]] = [(child, scopes[id(tree)]) for child in tree.body]
    getters = CHILD_GETTERS
    while stack:
        node, scope = stack.pop()
        everything.append(node)
        kind = type(node)
        if kind in SCOPES:
            inner = scopes[id(node)] = []
            stack.extend([(child, inner) for child in node.body])
            stack.extend([(child, scope) for child in (*node.decorator_list, node.args)])
            continue
        if scope is not None:
            scope.append(node)
        if kind is ast.ClassDef or kind is ast.Lambda:
            scope = None
        stack.extend([(child, scope) for child in getters[kind](node)])
    return everything, scopes


class _Conditions:
    """``get(id(call))``: the source of the innermost ``if`` test (or ternary) a call depends
    on, or None. Only the few calls that cast ask, so the branches are searched per call."""

    def __init__(self, nodes) -> None:
        self._calls = {id(n): n for n in nodes if type(n) is ast.Call}
        self._branches: list | None = None
        self._nodes = nodes

    def _all_branches(self) -> list:
        branches = []
        for node in self._nodes:
            if type(node) is ast.If:
                test = ast.unparse(node.test)
                for body, words in ((node.body, test), (node.orelse, f"not ({test})")):
                    if body:
                        branches.append(((body[0].lineno, body[0].col_offset),
                                         (body[-1].end_lineno, body[-1].end_col_offset), words))
            elif type(node) is ast.IfExp:
                test = ast.unparse(node.test)
                for part, words in ((node.body, test), (node.orelse, f"not ({test})")):
                    branches.append(((part.lineno, part.col_offset), (part.end_lineno, part.end_col_offset), words))
        return branches

    def get(self, key: int) -> str | None:
        call = self._calls.get(key)
        if call is None:
            return None
        if self._branches is None:
            self._branches = self._all_branches()
        start, end = (call.lineno, call.col_offset), (call.end_lineno, call.end_col_offset)
        inside = [b for b in self._branches if b[0] <= start and end <= b[1]]
        return max(inside, key=lambda b: b[0])[2] if inside else None

    def __contains__(self, key: int) -> bool:
        return self.get(key) is not None


def summarize(tree: ast.Module, text: str, flow_calls: dict | None = None) -> dict:
    """The summary of one parsed file (see the module docstring); ``flow_calls``: the dtypes its
    calls pass (call_sites.flow_arguments)."""
    return Summarizer(tree, text, flow_calls).run()


EMPTY: dict = {"format": FORMAT, "imports": {}, "classes": {}, "functions": {}, "casts": [], "returned_casts": {},
               "arguments": [], "saves": [], "method_calls": [], "settings": {}, "passes": [], "call_sites": [], "calls": [],
               "config_loads": False, "values": {}, "parts": [], "effect_calls": [], "bound_forwards": [],
               "autocast_calls": [], "framework_autocast": [], "runner_calls": []}


def summarize_tree(tree: ast.Module | None, text: str, flow_calls: dict | None = None) -> dict:
    """``summarize``, or an empty summary for a file that does not parse or nests too deeply."""
    if tree is None:
        return EMPTY
    try:
        return summarize(tree, text, flow_calls)
    except (RecursionError, ValueError):
        return EMPTY

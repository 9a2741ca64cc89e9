"""The project pass: join the files' summaries into precision worlds.

A *world* of a class is a precision it may run under somewhere in the program: its instances
(or a model that contains it as a submodule, or a subclass's instances) are cast to float16 or
bfloat16 by ``.half()`` / ``.to(torch.bfloat16)`` / ``.to(dtype)`` with a low ``dtype``, in any
function, class or file of the checked paths. Imports between the files resolve (``from model
import GPT``, ``from .layers import Block``, ``import pkg.model as m``); a name that resolves
to no checked file is left alone. A world is *conditional* when the cast sits under an ``if``
(a flag's branch) or takes a dtype chosen at run time: a reachable configuration, medium
confidence; an unconditional cast makes a certain world. Frameworks cast too (``project/handoffs.py``:
``deepspeed.initialize(model=m, config=...)`` with fp16/bf16 enabled, Lightning's ``"16-true"``),
and ``generate(logits_processor=[proc])`` of a low-precision model makes a *callback* world of
``proc``'s class (only its ``__call__`` gets the dtype); those are conditional (a launcher or CLI
may override the setting). A DeepSpeed config named by another file's constant or a JSON file
is resolved here. A class whose ``__init__`` casts itself or a submodule builds cast instances:
``returned`` gives them to the callers in other files, ``parameters`` to the helpers those
callers hand them to.

Everything here is linear in the number of files and casts (each summary is indexed once; each
cast resolves through at most a few function returns; containment is one graph walk).
"""

from __future__ import annotations

import dataclasses
import json
import posixpath

from dtype_lint.facts.flow.seeding import relative

MAX_RESOLVE_DEPTH = 4


@dataclasses.dataclass(frozen=True)
class World:
    """``dtype`` (fp16/bf16) the class runs in, because of the cast at ``path:line`` (``text``)."""

    dtype: str
    conditional: bool
    condition: str | None
    path: str
    line: int
    text: str
    via: str | None = None  # the containing class the cast reached it through
    setting: str | None = None  # a framework's setting that casts (``under the DeepSpeed config ...``)
    trains: bool = False  # the optimizer steps these low-precision parameters (no float32 master copy)
    methods: tuple[str, ...] = ()  # a callback world: only these methods get the dtype's tensors
    autocast: bool = False  # an autocast region the class runs under, not a cast of its parameters

    def where(self, base: str = "") -> str:
        """``train.py:11``, the path relative to ``base`` (the directory of the file it is told to)."""
        return f"{relative(self.path, base)}:{self.line}"

    def describe(self, base: str = "") -> str:
        """``float16 when `args.fp16` is true (train.py:11, `layer.half()`)``."""
        from dtype_lint.facts.flow.values import LONG_NAMES

        when = f" {self.setting}" if self.setting else ""
        if self.condition:
            when += f" when `{self.condition}` is true"
        elif self.conditional and not self.setting:
            when = " in some configurations"
        via = f", through `{self.via}`" if self.via else ""
        kind = " autocast" if self.autocast else ""
        return f"{LONG_NAMES.get(self.dtype, self.dtype)}{kind}{when} ({self.where(base)}, `{self.text}`{via})"

    def to_json(self) -> list:
        return [self.dtype, self.conditional, self.condition, self.path, self.line, self.text, self.via,
                self.setting, self.trains, list(self.methods), self.autocast]

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.dtype, self.text, self.condition or "", self.via or "", self.conditional,
                self.setting or "", self.trains, self.methods, self.autocast)


@dataclasses.dataclass(frozen=True)
class Entered:
    """A class (or function) runs under the autocast region ``world``: its methods ``entries``
    (empty: every method but ``__init__``); ``activations``: reached as a submodule of a model
    that runs under it, so its tensor parameters are what the model's layers made under autocast."""

    world: World
    device: str | None
    entries: tuple[str, ...] = ()
    activations: bool = False

    def sort_key(self) -> tuple:
        return (*self.world.sort_key(), self.device or "", self.entries, self.activations)


def _nearest(files: list[str], importer: str, module: str) -> list[str]:
    """Of several files a module name may mean (``val`` for ``val.py`` and ``classify/val.py``),
    the one Python imports for ``importer``: beside it (a script's own folder is first on
    ``sys.path``) or at the top of the checked tree; all of them when neither holds one."""
    if len(files) < 2:
        return files
    relative = module.replace(".", "/")
    here = posixpath.dirname(importer.replace("\\", "/"))
    wanted = {posixpath.normpath(posixpath.join(folder, relative + tail))
              for folder in {here, ""} for tail in (".py", "/__init__.py")}
    found = [f for f in files if posixpath.normpath(f.replace("\\", "/")) in wanted]
    return found or files


def module_names(path: str) -> list[str]:
    """The dotted module names a file may be imported as: every suffix of its path
    (``src/pkg/model.py`` -> ``src.pkg.model``, ``pkg.model``, ``model``); a package's
    ``__init__.py`` is the package."""
    parts = posixpath.normpath(path.replace("\\", "/")).split("/")
    parts = [p for p in parts if p not in ("", ".")]
    if not parts or not parts[-1].endswith(".py"):
        return []
    parts[-1] = parts[-1][:-3]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    names = []
    for start in range(len(parts)):
        tail = parts[start:]
        if tail and all(p.isidentifier() for p in tail):
            names.append(".".join(tail))
    return names


class Project:
    def __init__(self, summaries: dict[str, dict], files: dict[str, str] | None = None) -> None:
        # path -> summary, only the files that have one, in a fixed order
        self.summaries = {path: summaries[path] for path in sorted(summaries) if summaries[path]}
        self.files = files or {}  # path -> where the file is on disk (default: the path itself)
        self.by_module: dict[str, list[str]] = {}
        for path in self.summaries:
            for name in module_names(path):
                self.by_module.setdefault(name, []).append(path)
        self._resolved: dict[tuple[str, str], tuple] = {}
        self._method_index: dict[str, list[tuple[str, str]]] | None = None  # method -> classes defining it

    # -- names ------------------------------------------------------------------------------------
    def _absolute(self, path: str, qualified: str) -> str:
        """``.layers.Block`` imported in ``pkg/model.py`` -> ``pkg.layers.Block``."""
        if not qualified.startswith("."):
            return qualified
        level = len(qualified) - len(qualified.lstrip("."))
        names = module_names(path)
        package = names[0].split(".") if names else []
        if not path.endswith("__init__.py"):
            package = package[:-1]
        package = package[: len(package) - (level - 1)] if level > 1 else package
        rest = qualified[level:]
        return ".".join([*package, rest]) if package else rest

    def _lookup_module(self, dotted: str) -> tuple[list[str], str] | None:
        """The files holding the longest module prefix of ``dotted``, and what remains."""
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            files = self.by_module.get(".".join(parts[:cut]))
            if files:
                return files, ".".join(parts[cut:])
        return None

    def resolve(self, path: str, ref: str, depth: int = 0) -> tuple[tuple[str, str, str], ...]:
        """What ``ref`` spelled in ``path`` names: ``(kind, path, name)`` with kind ``class`` or
        ``function`` (a function's or method's results are resolved by the caller)."""
        key = (path, ref)
        if key in self._resolved:
            return self._resolved[key]
        self._resolved[key] = ()  # cycles resolve to nothing
        found: list[tuple[str, str, str]] = []
        summary = self.summaries.get(path)
        if summary is not None and depth <= MAX_RESOLVE_DEPTH:
            head, _, rest = ref.partition(".")
            if not rest and head in summary["classes"]:
                found.append(("class", path, head))
            elif ref in summary["functions"]:
                found.append(("function", path, ref))
            elif not rest and head in summary.get("settings", {}):
                found.append(("setting", path, head))
            elif head in summary["imports"]:
                for target in summary["imports"][head]:
                    absolute = self._absolute(path, target) + (f".{rest}" if rest else "")
                    located = self._lookup_module(absolute)
                    if located is None:
                        continue
                    files, name = located
                    for other in _nearest(files, path, absolute[: len(absolute) - len(name) - 1] if name else absolute):
                        found.extend(self.resolve(other, name, depth + 1))
        result = tuple(sorted(set(found)))
        self._resolved[key] = result
        return result

    def classes_of(self, path: str, refs, depth: int = 0) -> set[tuple[str, str]]:
        """The project classes (path, name) a value spelled by ``refs`` in ``path`` may be."""
        found: set[tuple[str, str]] = set()
        if depth > MAX_RESOLVE_DEPTH:
            return found
        for ref in refs:
            if ref.startswith("param:"):
                continue
            for kind, where, name in self.resolve(path, ref):
                if kind == "class":
                    found.add((where, name))
                elif kind == "function":
                    returns = self.summaries[where]["functions"][name]["returns"]
                    found |= self.classes_of(where, returns, depth + 1)
        return found

    # -- worlds -----------------------------------------------------------------------------------
    def worlds(self) -> dict[tuple[str, str], list[World]]:
        """(path, class) -> the low-precision worlds it may run under, sorted."""
        direct: dict[tuple[str, str], set[World]] = {}
        for path, summary in self.summaries.items():
            for cast in summary["casts"]:
                dtype, setting = cast["dtype"], cast.get("setting")
                if dtype is None:
                    dtype, setting = self._config(path, cast)
                if dtype is None or dtype.startswith("param:"):
                    continue
                world = World(dtype, cast["conditional"], cast["condition"], path, cast["line"], cast["text"],
                              setting=setting, trains=cast.get("trains", False), methods=tuple(cast.get("methods", ())))
                for cls in self.classes_of(path, cast["refs"]):
                    direct.setdefault(cls, set()).add(world)
        # a cast of one attribute (``model.backbone.half()``) casts the class that attribute holds
        for (path, name), attr, _, kind, world in self._part_entries():
            info = self.summaries[path]["classes"].get(name)
            if kind == "cast" and info is not None:
                for cls in self.classes_of(path, info["attrs"].get(attr, ())):
                    direct.setdefault(cls, set()).add(world)
        # a cast reaches the submodules a class builds, and the base classes whose methods run
        edges: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for path, summary in self.summaries.items():
            for name, info in summary["classes"].items():
                reached = self.classes_of(path, [*info["contains"], *info["bases"]])
                reached.discard((path, name))
                if reached:
                    edges[(path, name)] = reached
        result: dict[tuple[str, str], set[World]] = {cls: set(worlds) for cls, worlds in direct.items()}
        for root in sorted(direct):
            stack = [root]
            seen = {root}
            while stack:
                current = stack.pop()
                for inner in sorted(edges.get(current, ())):
                    if inner in seen:
                        continue
                    seen.add(inner)
                    via = root[1]
                    # a callback world is the given object's own: its parts are not called with its tensors
                    result.setdefault(inner, set()).update(
                        dataclasses.replace(world, via=world.via or via) for world in direct[root] if not world.methods
                    )
                    stack.append(inner)
        return {cls: sorted(worlds, key=World.sort_key) for cls, worlds in sorted(result.items())}

    def _config(self, path: str, cast: dict) -> tuple[str | None, str | None]:
        """(low dtype, words) of a DeepSpeed config a handoff names: a module constant of another
        file (``from configs import DS_CONFIG``) or a JSON file beside the calling file."""
        if "config_ref" in cast:
            for kind, where, name in self.resolve(path, cast["config_ref"]):
                if kind == "setting":
                    constant = self.summaries[where]["settings"][name]
                    if "file" in constant:
                        return self._config(where, {"config_file": constant["file"]})
                    shown = f"{relative(where, posixpath.dirname(path))}:{constant['line']}"
                    return constant["dtype"], f"{constant['setting']} of {shown}"
        if "config_file" in cast:
            from dtype_lint.project.config_files import deepspeed_file_setting

            return deepspeed_file_setting(self.files.get(path, path), cast["config_file"])
        return None, None

    # -- parts: submodules given a dtype apart from their model ---------------------------------
    def _called_methods(self) -> dict[tuple[str, str, str], bool]:
        """(path, class, method) -> only conditionally: the methods a statement runs on an
        instance (``model.init_weights()``) or on ``self``, anywhere in the program."""
        called: dict[tuple[str, str, str], bool] = {}
        for path, summary in self.summaries.items():
            for call in summary.get("effect_calls", ()):
                owners = {(path, call["class"])} if call["class"] else self.classes_of(path, call["refs"])
                for where, name in owners:
                    key = (where, name, call["method"])
                    called[key] = called.get(key, True) and call["conditional"]
        return called

    def _holders(self, path: str, part: dict) -> set[tuple[str, str]]:
        """The classes whose attribute ``part["attrs"][-1]`` the part sets (through the chain)."""
        holders = {(path, part["class"])} if part["class"] else self.classes_of(path, part["refs"])
        for attr in part["attrs"][:-1]:
            inner: set[tuple[str, str]] = set()
            for where, name in sorted(holders):
                info = self.summaries[where]["classes"].get(name)
                if info is not None:
                    inner |= self.classes_of(where, info["attrs"].get(attr, ()))
            holders = inner
        return holders

    def _part_entries(self) -> list[tuple[tuple[str, str], str, bool, str, World]]:
        """(class, attribute, the class sets it itself, kind, world) for every part that applies: a
        part a method sets applies when the program runs that method (``__init__`` always)."""
        called = self._called_methods()
        found = []
        for path, summary in self.summaries.items():
            for part in summary.get("parts", ()):
                conditional = part["conditional"]
                holders = self._holders(path, part)
                if part["method"] not in (None, "__init__"):
                    key = (path, part["class"], part["method"])
                    if key not in called:
                        continue  # a helper nobody calls casts nothing
                    conditional = conditional or called[key]
                text = part["text"] + (f"` in `{part['method']}" if part["method"] not in (None, "__init__") else "")
                world = World(part["dtype"], conditional, part["condition"], path, part["line"], text)
                own = part["class"] is not None and len(part["attrs"]) == 1
                found.extend((holder, part["attrs"][-1], own, part["kind"], world) for holder in sorted(holders))
        return found

    def parts(self) -> dict[tuple[str, str], dict[str, list[World]]]:
        """(path, class) -> attribute -> the dtypes the program gives that submodule apart from
        the rest of the class by a cast (``model.backbone.half()``, ``self.wte.to(torch.bfloat16)``
        in an ``init_weights`` the program calls). A part of a class is a part of its subclasses'
        instances too (whose methods it may run)."""
        found: dict[tuple[str, str], dict[str, set[World]]] = {}
        bases = self._base_edges()
        for holder, attr, _, kind, world in self._part_entries():
            if kind != "cast":
                # a layer built with ``dtype=``: made so on purpose, and often run under autocast,
                # which hands it its dtype; only its training (``built``) is judged
                continue
            stack, seen = [holder], {holder}
            while stack:  # the class and the bases whose methods its instances run
                current = stack.pop()
                found.setdefault(current, {}).setdefault(attr, set()).add(world)
                for base in sorted(bases.get(current, ())):
                    if base not in seen:
                        seen.add(base)
                        stack.append(base)
        return {cls: {attr: sorted(worlds, key=World.sort_key) for attr, worlds in sorted(by_attr.items())}
                for cls, by_attr in sorted(found.items())}

    def built(self) -> dict[str, dict[str, list[World]]]:
        """path -> called name -> the low parts of the project class (of another file) it builds:
        the class's own parts (set in ``__init__`` or a method the program calls), and those of
        every class it contains (a model of ``BasicBlockIR`` blocks holds their float16 PReLU)."""
        own: dict[tuple[str, str], set[World]] = {}
        for holder, _, by_itself, _, world in self._part_entries():
            info = self.summaries[holder[0]]["classes"].get(holder[1], {})
            if by_itself and not info.get("freezes"):
                # every instance has it (a cast of one instance stays with that instance); a class
                # that freezes parameters may hold a frozen low part, which has no gradients to scale
                own.setdefault(holder, set()).add(world)
        if not own:
            return {}
        contains: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for path, summary in self.summaries.items():
            for name, info in summary["classes"].items():
                attrs = [ref for refs in info["attrs"].values() for ref in refs]
                reached = self.classes_of(path, [*info["contains"], *attrs, *info["bases"]])
                reached.discard((path, name))
                if reached:
                    contains[(path, name)] = reached
        memo: dict[tuple[str, str], frozenset] = {}

        def low_parts(cls: tuple[str, str]) -> frozenset:
            if cls not in memo:
                memo[cls] = frozenset()  # cycles contribute nothing
                found = set(own.get(cls, ()))
                for inner in sorted(contains.get(cls, ())):
                    found |= low_parts(inner)
                memo[cls] = frozenset(found)
            return memo[cls]

        result: dict[str, dict[str, list[World]]] = {}
        for path, summary in self.summaries.items():
            for name in summary.get("calls", ()):
                for kind, where, cls in self.resolve(path, name):
                    if kind == "class" and where != path:
                        worlds = low_parts((where, cls))
                        if worlds:
                            result.setdefault(path, {})[name] = sorted(worlds, key=World.sort_key)
        return result

    def bound(self) -> dict[tuple[str, str], list[World]]:
        """(path, function) -> the worlds of the models whose modules run it as their forward
        (``module.forward = fn.__get__(module)`` next to ``model = model.half()``, in one function)."""
        found: dict[tuple[str, str], set[World]] = {}
        for path, summary in self.summaries.items():
            bindings = summary.get("bound_forwards", ())
            if not bindings:
                continue
            for binding in bindings:
                worlds = {
                    World(cast["dtype"], cast["conditional"], cast["condition"], path, cast["line"], cast["text"])
                    for cast in summary["casts"]
                    if cast["owner"] == binding["owner"] and not cast["dtype"].startswith("param:")
                }
                if not worlds:
                    continue
                for kind, where, name in self.resolve(path, binding["function"]):
                    if kind == "function" and "." not in name:
                        found.setdefault((where, name), set()).update(worlds)
        return {key: sorted(worlds, key=World.sort_key) for key, worlds in sorted(found.items())}

    def _base_edges(self) -> dict[tuple[str, str], set[tuple[str, str]]]:
        edges: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for path, summary in self.summaries.items():
            for name, info in summary["classes"].items():
                reached = self.classes_of(path, info["bases"])
                reached.discard((path, name))
                if reached:
                    edges[(path, name)] = reached
        return edges


    def autocast_worlds(self) -> dict[tuple[str, str], list[Entered]]:
        """(path, class) -> the autocast regions its methods run under, sorted: the calls of its
        instances inside an enabled autocast region (``model(x)``, ``self.net(x)``,
        ``policy.act(x)``), the frameworks that run it under autocast (``trainer.fit(model)`` with
        ``Trainer(precision="16-mixed")``), the models that contain it, and its subclasses'."""
        direct: dict[tuple[str, str], set[Entered]] = {}
        for path, summary in self.summaries.items():
            for call in summary.get("autocast_calls", ()):
                world = World(call["dtype"], call["conditional"], call["condition"], path, call["line"], call["text"],
                              autocast=True)
                method = call["method"]
                entries = ("forward",) if method == "__call__" else (method,)
                classes = self.classes_of(path, call["refs"])
                if not classes and all(ref.startswith("param:") for ref in call["refs"]):
                    # a model the function is given: which class it is, only a guess (medium)
                    classes = self._given_classes(path, method)
                    world = dataclasses.replace(world, conditional=True)
                for cls in classes:
                    direct.setdefault(cls, set()).add(Entered(world, call["device"], entries))
        frameworks = self._framework_autocast()
        for path, summary in self.summaries.items():
            for call in summary.get("runner_calls", ()):
                for world in frameworks.get(call["framework"], ()):
                    device = "cuda" if world.dtype == "fp16" else None
                    for cls in self.classes_of(path, call["refs"]):
                        direct.setdefault(cls, set()).add(Entered(world, device, tuple(call["entries"])))
        spread = self._spread(direct)
        return {cls: sorted({dataclasses.replace(item, entries=self._reached(cls, item.entries)) for item in items},
                            key=Entered.sort_key) for cls, items in spread.items()}

    def _reached(self, cls: tuple[str, str], entries: tuple[str, ...]) -> tuple[str, ...]:
        """``entries`` and the methods they call through ``self.``, defined in the class or a base
        (empty: every method)."""
        if not entries:
            return ()
        chain = [cls]  # the class and its bases, nearest first
        for path, name in chain:
            if len(chain) > MAX_RESOLVE_DEPTH:
                break
            bases = self.summaries[path]["classes"][name]["bases"]
            chain.extend(base for base in sorted(self.classes_of(path, bases)) if base not in chain)
        reached = set(entries)
        pending = list(entries)
        while pending:
            method = pending.pop()
            for path, name in chain:
                called = self.summaries[path]["functions"].get(f"{name}.{method}", {}).get("calls")
                if called is None:
                    continue
                for callee in called:
                    inner = callee[5:]
                    if callee.startswith("self.") and inner not in reached and any(
                            f"{n}.{inner}" in self.summaries[p]["functions"] for p, n in chain):
                        reached.add(inner)
                        pending.append(inner)
                break
        return tuple(sorted(reached))

    def _framework_autocast(self) -> dict[str, list[World]]:
        found: dict[str, list[World]] = {}
        for path, summary in self.summaries.items():
            for item in summary.get("framework_autocast", ()):
                found.setdefault(item["framework"], []).append(World(
                    item["dtype"], item["conditional"], item["condition"], path, item["line"], item["text"],
                    autocast=True))
        return found

    def _given_classes(self, path: str, method: str) -> set[tuple[str, str]]:
        """The classes a model handed to a function may be: ``model(x)``, a module class of the
        same file; ``policy.select_action(x)``, the one class of the project with that method."""
        if method == "__call__":
            return {(path, name) for name, info in self.summaries[path]["classes"].items() if "forward" in info["methods"]}
        if self._method_index is None:
            self._method_index = {}
            for where, summary in self.summaries.items():
                for name, info in summary["classes"].items():
                    for defined in info["methods"]:
                        self._method_index.setdefault(defined, []).append((where, name))
        owners = self._method_index.get(method, [])
        return set(owners) if len(owners) == 1 and not method.startswith("_") else set()

    def _spread(self, direct: dict) -> dict[tuple[str, str], list[Entered]]:
        """The worlds reach the base classes (the same methods run) and the submodules a class
        builds (every method, their inputs made under autocast)."""
        result = {cls: set(entered) for cls, entered in direct.items()}
        for root in sorted(direct):
            stack = [(root, tuple(sorted(direct[root], key=Entered.sort_key)))]
            seen = {root}
            while stack:
                (path, name), items = stack.pop()
                info = self.summaries[path]["classes"][name]
                inner_items = tuple(
                    Entered(dataclasses.replace(i.world, via=i.world.via or root[1]), i.device, (), True) for i in items)
                for inner, reached in (*((c, items) for c in sorted(self.classes_of(path, info["bases"]))),
                                       *((c, inner_items) for c in sorted(self.classes_of(path, info["contains"])))):
                    if inner in seen:
                        continue
                    seen.add(inner)
                    result.setdefault(inner, set()).update(reached)
                    stack.append((inner, reached))
        return {cls: sorted(items, key=Entered.sort_key) for cls, items in sorted(result.items())}

    def autocast_functions(self, worlds: dict[tuple[str, str], list[Entered]]) -> dict[tuple[str, str], list[Entered]]:
        """(path, function) -> the autocast regions it runs under: the free functions the methods
        of a class under autocast call (``eager_attention_forward(q, k, v)`` in ``select_action``),
        in any file, and the functions those call."""
        found: dict[tuple[str, str], set[Entered]] = {}
        stack: list[tuple[str, str, Entered]] = []
        for (path, name), items in worlds.items():
            functions = self.summaries[path]["functions"]
            for item in items:
                methods = item.entries or self.summaries[path]["classes"][name]["methods"]
                for method in sorted(m for m in methods if m != "__init__"):
                    world = dataclasses.replace(item.world, via=f"{name}.{method}")
                    stack.extend((path, callee, Entered(world, item.device))
                                 for callee in functions.get(f"{name}.{method}", {}).get("calls", ()))
        seen: set[tuple] = set()
        while stack:
            path, callee, item = stack.pop()
            for kind, where, function in self.resolve(path, callee):
                key = (where, function, item.world.dtype, item.world.conditional)  # a few per function: linear
                if kind != "function" or "." in function or key in seen:
                    continue
                seen.add(key)
                found.setdefault((where, function), set()).add(item)
                stack.extend((where, inner, item) for inner in self.summaries[where]["functions"][function].get("calls", ()))
        return {fn: sorted(items, key=Entered.sort_key) for fn, items in sorted(found.items())}

    def arguments(self) -> dict[tuple[str, str], dict[str, list[World]]]:
        """(path, class) -> constructor keyword -> the low dtypes callers pass it
        (``AlignRestore(dtype=torch.float16)`` in another file)."""
        found: dict[tuple[str, str], dict[str, set[World]]] = {}
        for path, summary in self.summaries.items():
            for call in summary.get("arguments", ()):
                for kind, where, name in self.resolve(path, call["ref"]):
                    if kind != "class":
                        continue
                    for keyword, dtype in sorted(call["keywords"].items()):
                        world = World(dtype, call["conditional"], None, path, call["line"], call["text"])
                        found.setdefault((where, name), {}).setdefault(keyword, set()).add(world)
        return {cls: {kw: sorted(worlds, key=World.sort_key) for kw, worlds in sorted(by_kw.items())}
                for cls, by_kw in sorted(found.items())}

    def config_values(self, data: dict[str, list]) -> dict[str, dict[str, list]]:
        """path -> the config settings the file may read (dtype_lint/facts/config_values.py):
        ``data:<key path>`` from the data files (``data``, for a file that loads a config file)
        and ``py:<local name>.<attributes>`` from the module-level config objects and config
        classes of the project files it imports (``from config import cfg``, ``import config``)."""
        found: dict[str, dict[str, list]] = {}
        for path, summary in self.summaries.items():
            settings: dict[str, list] = {}
            if summary.get("config_loads") and data:
                settings.update((f"data:{key}", values) for key, values in data.items())
            for key, (value, line) in sorted(summary.get("values", {}).items()):
                settings.setdefault(f"py:{key}", []).append([value, f"{path}:{line}"])  # the file's own objects
            for local, targets in sorted(summary["imports"].items()):
                for target in targets:
                    absolute = self._absolute(path, target)
                    # ``import config`` (a module: its objects under the local name) or
                    # ``from config import cfg`` (one object of the module)
                    modules = [(files, "") for files in [self.by_module.get(absolute)] if files]
                    located = self._lookup_module(absolute)
                    if located is not None:
                        modules.append(located)
                    for files, name in modules:
                        for other in files:
                            if other == path:
                                continue
                            for key, (value, line) in sorted(self.summaries[other].get("values", {}).items()):
                                if name and not key.startswith(name + "."):
                                    continue
                                spelled = f"{local}.{key[len(name) + 1:]}" if name else f"{local}.{key}"
                                settings.setdefault(f"py:{spelled}", []).append([value, f"{other}:{line}"])
            if settings:
                found[path] = {key: settings[key] for key in sorted(settings)}
        return found

    def returned(self) -> dict[str, dict[str, list["Returned"]]]:
        """path -> called name -> the low-precision models the project function it names returns
        (``model, diffusion = load_model(use_fp16=True)`` with ``model.half()`` in load_model)."""
        found: dict[str, dict[str, list[Returned]]] = {}
        for path, summary in self.summaries.items():
            for name in summary.get("calls", ()):
                for kind, where, function in self.resolve(path, name):
                    if kind not in ("function", "class") or where == path:
                        continue  # a function of the same file: the file's own flow follows the call
                    # a class: its ``__init__`` casts the instance, or a submodule of it (partial)
                    for cast in self.summaries[where].get("returned_casts", {}).get(function, ()):
                        world = World(cast["dtype"], cast["conditional"], cast["condition"], where, cast["line"],
                                      cast["text"])
                        found.setdefault(path, {}).setdefault(name, []).append(
                            Returned(function, world, cast["position"], cast["length"], kind == "class",
                                     cast.get("partial", False)))
        return {path: {name: sorted(set(items), key=Returned.sort_key) for name, items in sorted(calls.items())}
                for path, calls in sorted(found.items())}


    def parameters(self) -> dict[str, dict[str, dict[str, list["Returned"]]]]:
        """path -> function -> parameter -> the cast-built instances callers in other files pass
        it (``make_optimizer(args, Model(args))`` where ``Model.__init__`` halves a submodule)."""
        found: dict[str, dict[str, dict[str, set[Returned]]]] = {}
        for path, summary in self.summaries.items():
            for call in summary.get("passes", ()):
                for kind, where, function in self.resolve(path, call["ref"]):
                    if kind != "function" or where == path or "." in function:
                        continue  # same file: its flow follows the call; methods: ``self`` shifts slots
                    params = self.summaries[where]["functions"][function]["params"]
                    for slot, refs in call["args"]:
                        param = params[slot] if isinstance(slot, int) and slot < len(params) else slot
                        if param not in params:
                            continue
                        for cls_path, cls in sorted(self.classes_of(path, refs)):
                            for cast in self.summaries[cls_path].get("returned_casts", {}).get(cls, ()):
                                world = World(cast["dtype"], cast["conditional"], cast["condition"], cls_path,
                                              cast["line"], cast["text"])
                                found.setdefault(where, {}).setdefault(function, {}).setdefault(param, set()).add(
                                    Returned(cls, world, -1, 0, True, cast.get("partial", False)))
        return {path: {function: {param: sorted(items, key=Returned.sort_key) for param, items in sorted(by.items())}
                       for function, by in sorted(functions.items())}
                for path, functions in sorted(found.items())}
    def values(self) -> dict[str, dict[str, list["ReturnedValue"]]]:
        """path -> called name -> what the project functions it may name return (their summaries'
        ``results``): ``random_camera(4)`` imported from dataset.py, ``loader.load_inputs(...)`` on
        an instance of an imported class. Functions of the same file are the file's own flow's."""
        found: dict[str, dict[str, set[ReturnedValue]]] = {}
        for path, summary in self.summaries.items():
            for name in summary.get("calls", ()):
                for kind, where, function in self.resolve(path, name):
                    if kind == "function" and where != path:
                        self._add_value(found, path, name, where, function)
            for call in summary.get("method_calls", ()):
                method = call.get("method") or call["name"].rsplit(".", 1)[-1]
                # a submodule's ``forward`` is probed without its caller's dtype: only a result it
                # fixes itself on every path (``Timesteps``' float32 sinusoids) says what it gives
                fixed = method == "forward" and call["name"].count(".") == 1
                classes = [(where, cls) for ref in call["refs"] for kind, where, cls in self.resolve(path, ref)
                           if kind == "class" and where != path]
                if fixed:
                    self._add_forward_values(found, path, call["name"], classes)
                    continue
                for where, cls in classes:
                    self._add_value(found, path, call["name"], where, f"{cls}.{method}")
        return {path: {name: sorted(items, key=ReturnedValue.sort_key) for name, items in sorted(calls.items())}
                for path, calls in sorted(found.items())}

    def _add_forward_values(self, found: dict, path: str, name: str, classes: list) -> None:
        """``self.<name>(...)`` on a submodule that may be an instance of any of ``classes``: what
        their ``forward`` returns, when some fix it themselves on every path; float32 on one path
        only (partial) when another class may be there instead."""
        results = [(where, cls, self.summaries[where].get("results", {}).get(f"{cls}.forward"))
                   for where, cls in sorted(set(classes))]
        fixed = [(where, cls, result) for where, cls, result in results if result is not None and _fixed_result(result)]
        for where, cls, result in fixed:
            if len(fixed) < len(results):
                result = {"value": {**result["value"], "partial": True}}
            found.setdefault(path, {}).setdefault(name, set()).add(
                ReturnedValue(f"{cls}.forward", where, json.dumps(result, sort_keys=True)))

    def _add_value(self, found: dict, path: str, name: str, where: str, function: str) -> None:
        result = self.summaries[where].get("results", {}).get(function)
        if result is not None:
            found.setdefault(path, {}).setdefault(name, set()).add(
                ReturnedValue(function, where, json.dumps(result, sort_keys=True)))

    def weighted(self) -> dict[str, list[str]]:
        """path -> the names the file imports of project classes (of other files) that hold a
        torch.nn layer with weights among their attributes (``TimestepEmbedding``'s ``nn.Linear``)."""
        found: dict[str, set[str]] = {}
        for path, summary in self.summaries.items():
            for name in summary.get("imports", {}):
                if not name[:1].isupper():
                    continue
                for kind, where, cls in self.resolve(path, name):
                    if kind != "class" or where == path:
                        continue
                    attrs = self.summaries[where]["classes"].get(cls, {}).get("attrs", {})
                    if any(ref.rsplit(".", 1)[-1] in _WEIGHTED and ref.split(".")[0] in ("nn", "torch")
                           for refs in attrs.values() for ref in refs):
                        found.setdefault(path, set()).add(name)
        return {path: sorted(names) for path, names in sorted(found.items())}

    def argument_values(self) -> dict[tuple[str, str], dict[str, list["ReturnedValue"]]]:
        """(path, class) -> constructor keyword -> what callers pass it from a project function's
        result (``Head(768, class_weights=class_weights(labels))``, the helper in any file)."""
        found: dict[tuple[str, str], dict[str, set[ReturnedValue]]] = {}
        for path, summary in self.summaries.items():
            for call in summary.get("arguments", ()):
                if not call.get("calls"):
                    continue
                classes = [(where, name) for kind, where, name in self.resolve(path, call["ref"]) if kind == "class"]
                for keyword, called in sorted(call["calls"].items()):
                    for kind, where, function in self.resolve(path, called):
                        result = self.summaries[where].get("results", {}).get(function) if kind == "function" else None
                        if result is None or "value" not in result:
                            continue
                        value = ReturnedValue(function, where, json.dumps(result, sort_keys=True), path, call["line"])
                        for cls in classes:
                            found.setdefault(cls, {}).setdefault(keyword, set()).add(value)
        return {cls: {kw: sorted(items, key=ReturnedValue.sort_key) for kw, items in sorted(by_kw.items())}
                for cls, by_kw in sorted(found.items())}


def _fixed_result(result: dict) -> bool:
    """A single value of one known dtype on every path that follows no parameter."""
    leaf = result.get("value")
    return isinstance(leaf, dict) and len(leaf.get("dtypes", ())) == 1 and not leaf.get("partial") \
        and not leaf.get("follows")


# torch.nn layers that multiply their input by their weight (facts/diffusers_models.WEIGHTED_LAYERS)
_WEIGHTED = frozenset(
    "Linear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d".split())


@dataclasses.dataclass(frozen=True)
class ReturnedValue:
    """What project function ``function`` of ``path`` returns (its summary's result, as JSON);
    for a constructor argument, also the call that passes it (``caller:line``)."""

    function: str
    path: str
    result: str
    caller: str = ""
    line: int = 0

    def sort_key(self) -> tuple:
        return (self.path, self.function, self.result, self.caller, self.line)


@dataclasses.dataclass(frozen=True)
class Returned:
    """A project function returns a model cast to low precision (item ``position`` of a tuple
    of ``length``, or the whole value when -1)."""

    function: str
    world: World
    position: int
    length: int
    built: bool = False  # a class whose constructor casts the instance it builds
    partial: bool = False  # only a submodule of it is cast

    def sort_key(self) -> tuple:
        return (self.function, self.position, self.length, self.built, self.partial, *self.world.sort_key())


def project_worlds(summaries: dict[str, dict]) -> dict[str, dict[str, list[World]]]:
    """path -> class -> worlds, for the files whose classes run in low precision somewhere."""
    by_file: dict[str, dict[str, list[World]]] = {}
    for (path, name), worlds in Project(summaries).worlds().items():
        by_file.setdefault(path, {})[name] = worlds
    return by_file

"""What a dotted name in this file really refers to.

``import torch as T``, ``from torch.cuda import amp`` and ``from torch.cuda.amp import autocast
as ac`` all bind local names to qualified names; ``T.cuda.amp.GradScaler`` then resolves to
``torch.cuda.amp.GradScaler``. A local name bound to several targets (a ``try``/``except
ImportError`` fallback) resolves to all of them, in sorted order, so results never depend on
iteration order of a set.
"""

from __future__ import annotations

import libcst as cst


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a chain of Name/Attribute nodes, else None."""
    # exact type tests: libcst's node classes are final, and isinstance on them is slow (ABCMeta)
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _module_name(node: cst.BaseExpression | None) -> str:
    return dotted_name(node) if node is not None else ""


def _is_import_error_handler(handler: cst.ExceptHandler) -> bool:
    kinds = handler.type
    if kinds is None:
        return True
    names = [kinds] if not isinstance(kinds, cst.Tuple) else [el.value for el in kinds.elements]
    return any(dotted_name(name) in ("ImportError", "ModuleNotFoundError") for name in names)


class ImportTable:
    """Local name -> qualified names, built from every import in the file, in program order."""

    def __init__(self) -> None:
        self._bindings: dict[str, list[str]] = {}
        # dotted name -> resolve_dotted's answer: the rules ask a million times per few hundred
        # files, mostly the same few names (emptied by ``bind``)
        self._resolved: dict[str, tuple[str, ...]] = {}
        # Import statements that sit in a try/except ImportError fallback: fixes stay away.
        self.fallback_imports: set[int] = set()

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def from_module(cls, module: cst.Module) -> "ImportTable":
        table = cls()
        table._scan(module.body, in_fallback=False)
        return table

    def bind(self, local: str, qualified: str) -> None:
        targets = self._bindings.setdefault(local, [])
        if qualified not in targets:
            targets.append(qualified)
            self._resolved.clear()

    def _scan(self, statements, in_fallback: bool) -> None:
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        self._add_import(small)
                        if in_fallback:
                            self.fallback_imports.add(id(statement))
                    elif isinstance(small, cst.Assign):
                        self._add_alias_assignment(small)
            elif isinstance(statement, cst.Try):
                guarded = any(_is_import_error_handler(h) for h in statement.handlers)
                self._scan(statement.body.body, in_fallback or guarded)
                for handler in statement.handlers:
                    self._scan(handler.body.body, in_fallback or guarded)
                for block in (statement.orelse, statement.finalbody):
                    if block is not None:
                        self._scan(block.body.body, in_fallback)
            elif isinstance(statement, (cst.If, cst.For, cst.While, cst.With)):
                self._scan(statement.body.body, in_fallback)
                orelse = getattr(statement, "orelse", None)
                while orelse is not None:
                    self._scan(orelse.body.body, in_fallback)
                    orelse = getattr(orelse, "orelse", None)
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                if isinstance(statement.body, cst.IndentedBlock):
                    self._scan(statement.body.body, in_fallback)

    def _add_import(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _module_name(alias.name)
                if alias.asname is not None:
                    self.bind(_module_name(alias.asname.name), full)
                else:
                    # ``import torch.cuda.amp`` binds ``torch``.
                    top = full.split(".")[0]
                    self.bind(top, top)
            return
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = _module_name(node.module)
        for alias in node.names:
            imported = _module_name(alias.name)
            local = _module_name(alias.asname.name) if alias.asname is not None else imported
            self.bind(local, f"{module}.{imported}")

    def _add_alias_assignment(self, node: cst.Assign) -> None:
        """``autocast = torch.autocast`` (module-level aliases of imported names)."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        source = dotted_name(node.value) if isinstance(node.value, (cst.Name, cst.Attribute)) else None
        if source is None:
            return
        resolved = self.resolve_dotted(source)
        if resolved:
            for qualified in resolved:
                self.bind(node.targets[0].target.value, qualified)

    # -- queries ------------------------------------------------------------------------------
    def resolve_dotted(self, dotted: str) -> tuple[str, ...]:
        found = self._resolved.get(dotted)
        if found is None:
            head, _, rest = dotted.partition(".")
            targets = self._bindings.get(head)
            found = tuple(sorted({f"{target}.{rest}" if rest else target for target in targets})) if targets else ()
            self._resolved[dotted] = found
        return found

    def qualified_names(self, node: cst.BaseExpression) -> tuple[str, ...]:
        """Every qualified name ``node`` may refer to (sorted); empty when it is not imported."""
        dotted = dotted_name(node)
        return self.resolve_dotted(dotted) if dotted else ()

    def matches(self, node: cst.BaseExpression, *qualified: str) -> str | None:
        """The first of ``qualified`` (in the caller's order) that ``node`` may refer to."""
        names = self.qualified_names(node)
        for candidate in qualified:
            if candidate in names:
                return candidate
        return None

    def local_names_for(self, qualified: str) -> tuple[str, ...]:
        """How this file spells ``qualified`` (for fixes that must respect aliases), sorted."""
        spellings: set[str] = set()
        for local, targets in self._bindings.items():
            for target in targets:
                if qualified == target:
                    spellings.add(local)
                elif qualified.startswith(target + "."):
                    spellings.add(local + qualified[len(target):])
        return tuple(sorted(spellings, key=lambda s: (s.count("."), len(s), s)))

    def is_imported(self, module: str) -> bool:
        return any(
            target == module or target.startswith(module + ".")
            for targets in self._bindings.values()
            for target in targets
        )


def _names_in_target(target: cst.BaseExpression) -> list[str]:
    """The plain names an assignment target binds: ``a``, ``a, (b, *c)``; not ``a.b`` or ``a[0]``."""
    if type(target) is cst.Name:
        return [target.value]
    if type(target) is cst.StarredElement:
        return _names_in_target(target.value)
    if type(target) in (cst.Tuple, cst.List):
        return [name for element in target.elements for name in _names_in_target(element.value)]
    return []


class NameBindings:
    """Where the file binds plain names other than by an import the table resolved: assignments,
    loop and ``with``/``except`` targets, parameters, ``def``/``class``, walrus, relative imports.

    A fix that rewrites a call through a local name (``scaler_type(...)`` to
    ``torch.amp.GradScaler("cuda", ...)``) is safe only when that name means one API wherever the
    file binds it; mmengine binds ``scaler_type = GradScaler`` in one branch and
    ``scaler_type = ShardedGradScaler`` in another. Bindings are collected for the whole file, a
    superset of any one scope: a fix may be withheld needlessly, never offered wrongly.
    """

    def __init__(self, nodes: list[cst.CSTNode], imports: ImportTable) -> None:
        self._imports = imports
        # local name -> the value of each binding: an expression for ``name = value``, None where
        # the value is not one expression (a loop target, a parameter, a def, a tuple target).
        self._values: dict[str, list[cst.BaseExpression | None]] = {}
        # Names that are the whole target of an ``=`` (``fallback = autocast``), as DTL201 asks.
        self.assigned: set[str] = set()
        # ``exec(...)`` / ``globals()`` / ``setattr(sys.modules[...])``: bindings the file does not spell.
        self.rebinds_globals = False
        for node in nodes:
            kind = type(node)
            if kind is cst.Call and isinstance(node.func, cst.Name) and node.func.value in ("exec", "globals", "vars"):
                self.rebinds_globals = True
            if kind is cst.Assign:
                for target in node.targets:
                    if type(target.target) is cst.Name:
                        self.assigned.add(target.target.value)
                        self._bind(target.target.value, node.value)
                    else:
                        self._bind_all(_names_in_target(target.target))
            elif kind in (cst.AnnAssign, cst.AugAssign):
                value = node.value if kind is cst.AnnAssign else None
                if kind is cst.AugAssign or value is not None:
                    self._bind_all(_names_in_target(node.target), value)
            elif kind in (cst.For, cst.CompFor):
                self._bind_all(_names_in_target(node.target))
            elif kind is cst.NamedExpr:
                self._bind_all(_names_in_target(node.target), node.value)
            elif kind in (cst.WithItem, cst.ExceptHandler, cst.ExceptStarHandler):
                bound = node.asname if kind is cst.WithItem else node.name
                if bound is not None:
                    self._bind_all(_names_in_target(bound.name))
            elif kind in (cst.FunctionDef, cst.ClassDef, cst.Param):
                self._bind(node.name.value, None)
            elif kind is cst.ImportFrom and node.relative and not isinstance(node.names, cst.ImportStar):
                # ``from .scalers import GradScaler``: the table does not resolve relative imports.
                for alias in node.names:
                    local = alias.asname.name if alias.asname is not None else alias.name
                    self._bind_all(_names_in_target(local))

    def _bind(self, name: str, value: cst.BaseExpression | None) -> None:
        self._values.setdefault(name, []).append(value)

    def constant_bool(self, name: str) -> bool | None:
        """``use_lora = False``: the value of a name the file binds once, to ``True`` or ``False``
        (a flag written as a constant), else None. A file that may rebind its globals at run time
        (``exec(open(config).read())``, ``globals().update(...)``, nanoGPT's configurator) has none."""
        values = self._values.get(name, ())
        if len(values) != 1 or not isinstance(values[0], cst.Name) or values[0].value not in ("True", "False"):
            return None
        if self.rebinds_globals:
            return None
        return values[0].value == "True"

    def _bind_all(self, names: list[str], value: cst.BaseExpression | None = None) -> None:
        for name in names:
            self._bind(name, value if len(names) == 1 else None)

    def chooses_between(self, name: str, qualified: str) -> bool:
        """``name`` is assigned (``=``) in the file, and some assignment gives it something other
        than ``qualified``: a choice made at run time (Megatron-LM's ``custom_fwd = partial(
        torch.amp.custom_fwd, ...)`` on new torch, ``torch.cuda.amp.custom_fwd`` in the fallback;
        mmengine's ``scaler_type = GradScaler`` or ``ShardedGradScaler``)."""
        if name not in self.assigned:
            return False
        return any(
            value is not None and self._imports.qualified_names(value) != (qualified,)
            for value in self._values.get(name, ())
        )

    def sole_qualified_name(self, node: cst.BaseExpression) -> str | None:
        """The one qualified name ``node`` refers to wherever the file binds its head name (an
        import, or ``alias = <that import>``); None when the head is bound to anything else."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head = dotted.partition(".")[0]
        targets = self._imports.resolve_dotted(head)
        if len(targets) != 1:
            return None
        for value in self._values.get(head, ()):
            if value is None or set(self._imports.qualified_names(value)) != {targets[0]}:
                return None
        resolved = self._imports.resolve_dotted(dotted)
        return resolved[0] if len(resolved) == 1 else None

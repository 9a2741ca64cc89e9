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
        head, _, rest = dotted.partition(".")
        targets = self._bindings.get(head)
        if not targets:
            return ()
        return tuple(sorted({f"{target}.{rest}" if rest else target for target in targets}))

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

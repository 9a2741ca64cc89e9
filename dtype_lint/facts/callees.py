"""Cross-function facts within one file: which of the file's own functions a call runs.

Precision protocols are often split over methods: an engine's ``backward_loss`` does
``scaler.scale(loss).backward()``, its ``optimizer_step`` does ``scaler.step(opt)``, and a
callback calls both with a clip in between. A call is resolved to a definition of this file by its
last name (``runner.engine.backward_loss(...)`` -> ``def backward_loss``) when exactly one function
or method of the file has that name and no import binds it: a name defined twice (two classes'
``step``) is ambiguous and resolves to nothing, and so do dunder methods, whose calls are implicit.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.names import ImportTable
from dtype_lint.facts.training import walk


class FunctionIndex:
    def __init__(self, module: cst.Module, names: ImportTable) -> None:
        self._names = names
        self._by_name: dict[str, list[cst.FunctionDef]] = {}
        for node in walk(module, into_definitions=True):
            if isinstance(node, cst.FunctionDef):
                self._by_name.setdefault(node.name.value, []).append(node)

    def resolve(self, call: cst.Call) -> cst.FunctionDef | None:
        """The one definition of this file that ``call`` runs, or None when unknown or ambiguous."""
        func = call.func
        if isinstance(func, cst.Attribute):
            name = func.attr.value
        elif isinstance(func, cst.Name):
            name = func.value
            if self._names.qualified_names(func):
                return None
        else:
            return None
        if name.startswith("__"):
            return None
        found = self._by_name.get(name, [])
        return found[0] if len(found) == 1 else None


__all__ = ["FunctionIndex"]

"""Rules, one module per theme and one class per rule. Importing this package registers them."""

from __future__ import annotations

import importlib
import pkgutil

from dtype_lint.rules.base import REGISTRY, Rule

_loaded = False


def all_rules() -> list[type[Rule]]:
    """Every registered rule, ordered by code."""
    global _loaded
    if not _loaded:
        for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
            if module != "base":
                importlib.import_module(f"{__name__}.{module}")
        _loaded = True
    return [REGISTRY[code] for code in sorted(REGISTRY)]


def rule_for(code: str) -> type[Rule] | None:
    all_rules()
    return REGISTRY.get(code.upper())

"""Code that is already safe where a rule would see a precision hazard (issue 14, cause 3).

Each helper answers one question about a node; rules ask them before reporting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, walk

if TYPE_CHECKING:
    from dtype_lint.context import FileContext

_FLOAT32_SPELLINGS = frozenset({"torch.float32", "torch.float", "torch.float64", "torch.double", "float32", "float"})


def _upcasts_a_parameter(function: cst.FunctionDef) -> bool:
    """The function casts one of its parameters to float32 (or float64) before using it:
    ``F.cross_entropy(logits.float(), y)``, ``logits = logits.to(torch.float32)``."""
    parameters = {param.name.value for param in function.params.params}
    parameters |= {param.name.value for param in function.params.kwonly_params}
    for node in walk(function.body):
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            continue
        base = node.func.value
        while isinstance(base, (cst.Attribute, cst.Subscript)) or (
            isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute)
        ):
            base = base.func.value if isinstance(base, cst.Call) else base.value
        if not isinstance(base, cst.Name) or base.value not in parameters:
            continue
        method = node.func.attr.value
        if method in ("float", "double") and not node.args:
            return True
        if method in ("to", "type") and any(
            (dotted_name(arg.value) or "") in _FLOAT32_SPELLINGS for arg in node.args
            if arg.keyword is None or arg.keyword.value == "dtype"
        ):
            return True
    return False


def loss_upcasts_inputs(ctx: FileContext, call: cst.Call) -> bool:
    """``call`` runs a function of this file (``loss_fn(logits, y)``, ``self.compute_loss(...)``)
    and every definition of that name casts its inputs to float32 first: the loss does not run
    in the autocast region's low precision."""
    name = call_name(call)
    if not name:
        return False
    definitions = [
        node for node in walk(ctx.module, into_definitions=True)
        if isinstance(node, cst.FunctionDef) and node.name.value == name
    ]
    return bool(definitions) and all(_upcasts_a_parameter(definition) for definition in definitions)


def _no_grad(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """``torch.no_grad()`` / ``torch.inference_mode()`` (called or not, as a decorator is)."""
    func = expr.func if isinstance(expr, cst.Call) else expr
    return ctx.names.matches(func, "torch.no_grad", "torch.inference_mode") is not None


def without_grad(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``node`` runs inside ``with torch.no_grad():`` / ``inference_mode()`` or in a function
    decorated so: a loss computed there is an evaluation metric, no gradient flows from it."""
    scope = ctx.enclosing(node, cst.With, cst.FunctionDef)
    while scope is not None:
        if isinstance(scope, cst.With) and any(_no_grad(ctx, item.item) for item in scope.items):
            return True
        if isinstance(scope, cst.FunctionDef) and any(_no_grad(ctx, d.decorator) for d in scope.decorators):
            return True
        scope = ctx.enclosing(scope, cst.With, cst.FunctionDef)
    return False

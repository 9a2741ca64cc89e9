"""Complex tensors, as torch's generated semantics records them, and the casts that make them real.

Which ops return a complex tensor is read from the data (dtype_lint/data, ``out``: ``torch.polar``
gives ``complex64`` for float32 inputs, ``torch.view_as_complex``, ``torch.complex``, the forward
``torch.fft`` transforms, ``Tensor.cfloat``...), not written here. A cast of such a tensor to a
real dtype (``.float()``, ``.half()``, ``.to(torch.float32)``) keeps its real part only (torch's
``Casting complex values to real discards the imaginary part``, a warning, not an error).

The dtype lattice of the flow has no complex dtype; the facts here are syntactic: the cast's
receiver is the complex op's call, or a local name bound once, before the cast, to one.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.numerics import call_shape
from dtype_lint.facts.training import walk

# Tensor methods that cast to a real floating dtype.
REAL_CASTS = {"float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16"}
# The inverse transforms of a real signal's spectrum give a result whose imaginary part is
# rounding noise: taking the real part of ``torch.fft.ifft(X)`` is the usual intent, not a loss.
_INVERSE = "torch.fft.i"
# stft returns a complex tensor only with ``return_complex=True`` (a real one, deprecated, with False).
_RETURN_COMPLEX = ("torch.stft", "Tensor.stft", "torch.functional.stft")


def _complex_out(out) -> bool:
    if isinstance(out, str):
        return out.startswith("=complex")
    if isinstance(out, dict) and out:
        return all(str(result).startswith("complex") for result in out.values())
    return False


def complex_op(data, op: str) -> bool:
    """``op`` (a data name) returns a complex tensor for every real input the data records."""
    entry = data.entry(op) if data is not None else None
    return entry is not None and _complex_out(entry.get("out")) and not op.startswith(_INVERSE)


def complex_call(ctx, data, node: cst.BaseExpression) -> str | None:
    """The data name of the complex op ``node`` calls (``torch.polar``), or None."""
    if not isinstance(node, cst.Call):
        return None
    shape = call_shape(ctx, node)
    if shape is None:
        return None
    if shape.qualified is not None:
        name = shape.qualified
    elif shape.receiver is not None:
        name = f"Tensor.{shape.name}"
    else:
        return None
    if not complex_op(data, name):
        return None
    if name in _RETURN_COMPLEX:
        flag = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "return_complex"), None)
        if not (isinstance(flag, cst.Name) and flag.value == "True"):
            return None
    return name


def complex_value(ctx, data, node: cst.BaseExpression) -> tuple[str, cst.Call] | None:
    """(op, call) when ``node`` is a complex op's call, or a local name of the enclosing function
    bound exactly once, before ``node``, to one (and never rebound by a loop, ``with`` or ``+=``)."""
    name = complex_call(ctx, data, node)
    if name is not None:
        return name, node
    if not isinstance(node, cst.Name):
        return None
    scope = ctx.enclosing(node, cst.FunctionDef)
    if scope is None:
        return None
    params = scope.params
    if any(p.name.value == node.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)):
        return None
    bindings = []
    for statement in walk(scope.body):
        if isinstance(statement, cst.Assign):
            for target in statement.targets:
                if _binds(target.target, node.value):
                    bindings.append((target.target, statement.value))
        elif isinstance(statement, (cst.AnnAssign, cst.AugAssign)) and _binds(statement.target, node.value):
            bindings.append((statement.target, statement.value))
        elif isinstance(statement, (cst.For, cst.CompFor)) and _binds(statement.target, node.value):
            return None
        elif isinstance(statement, cst.WithItem) and statement.asname is not None and _binds(statement.asname.name, node.value):
            return None
        elif isinstance(statement, cst.NamedExpr) and _binds(statement.target, node.value):
            return None
    if len(bindings) != 1:
        return None
    target, value = bindings[0]
    if not isinstance(target, cst.Name) or value is None:
        return None
    if ctx.source_order(value)[1] >= ctx.source_order(node)[0]:
        return None
    name = complex_call(ctx, data, value)
    return (name, value) if name is not None else None


def _binds(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds(element.value, name) for element in target.elements)
    if isinstance(target, cst.StarredElement):
        return _binds(target.value, name)
    return False

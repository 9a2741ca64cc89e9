"""What each function of a file returns, for its callers in other files (the summary's ``results``).

Read from the file's dtype flow once its rules have run: each top-level function and each method
of a top-level class is run again as a caller elsewhere would call it, its parameters unknown or
at their defaults, and what it returns is written down as plain JSON when some of it is a tensor,
an array or a module of a known dtype. A parameter that carries a dtype (``dtype=torch.float32``,
``dtype_override=None``) is tried with float16 and with bfloat16: a returned value that takes the
dtype it is given *follows* the parameter, and the caller's argument decides it (its default when
the caller leaves it out). A sibling made without the dtype (``torch.zeros(...)`` beside
``x.to(dtype_override)``) keeps its own dtype.

A result is ``{"value": <leaf>}`` for a single value, ``{"items": [<leaf> | null, ...]}`` for a
tuple, ``{"element": <leaf>}`` for a list built by a comprehension; a leaf is ``{"kind", "dtypes",
"partial", "line", "text", "numpy", "follows", "position"}`` (``follows``: the parameter, with its
position among the call's positional arguments, or null).
"""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.flow.values import BF16, DTYPE, FP16, MODULE, NUMPY, TENSOR, TUPLE, Value, make

# Parameters that carry a dtype by name (their default may be None).
DTYPE_PARAMETER = re.compile(r"(^|_)(dtype|precision)(_|$)")
MAX_PROBED = 2  # dtype parameters tried per function
LEAF_KINDS = (TENSOR, NUMPY, MODULE)


def function_results(ctx) -> dict:
    """function key (``name`` / ``Class.method``) -> result, for the functions worth telling."""
    results: dict = {}
    flow = ctx.flow
    for statement in ctx.module.body:
        if isinstance(statement, cst.FunctionDef):
            _add(ctx, flow, results, statement.name.value, statement, method=False)
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            for item in statement.body.body:
                if isinstance(item, cst.FunctionDef) and item.name.value != "__init__":
                    _add(ctx, flow, results, f"{statement.name.value}.{item.name.value}", item, method=True)
    return results


def _add(ctx, flow, results: dict, key: str, function: cst.FunctionDef, method: bool) -> None:
    probed = probe(ctx, function, method)
    if probed is not None:
        result = _result(ctx, function, *probed)
        if result is not None:
            results[key] = result


def dtype_parameters(ctx, function: cst.FunctionDef) -> list[str]:
    """The parameters that carry a dtype: by name, or by a dtype default."""
    found = []
    for param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
        name = param.name.value
        default = ctx.flow.value_of(param.default) if param.default is not None else None
        if DTYPE_PARAMETER.search(name.lower()) or (default is not None and default.kind == DTYPE):
            found.append(name)
    return found


def probe(ctx, function: cst.FunctionDef, method: bool):
    """``(plain, probes, positional)``: what ``function`` returns to a caller that leaves its
    parameters unknown or defaulted; dtype parameter -> (returns given float16, given
    bfloat16); the parameters a caller passes by position. None when not worth asking.
    Asked once per function (DTL113 and the summary share the runs)."""
    cache = ctx.__dict__.setdefault("_probed_results", {})
    if id(function) not in cache:
        cache[id(function)] = _probe(ctx, function, method)
    return cache[id(function)]


def _probe(ctx, function: cst.FunctionDef, method: bool):
    flow = ctx.flow
    summary = flow.summary(function)
    if summary is None:
        return None  # never run (nested in something the flow did not enter)
    probed = dtype_parameters(ctx, function)
    if not probed:
        # nothing a caller's argument decides: what the file's own runs of it learnt (a run that
        # knows less would learn no more), at no further cost
        return (summary.returns, {}, []) if _worth(summary.returns) else None
    plain = flow.returns_when_called(function, {})
    positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    if method and positional:
        positional = positional[1:]
    probes = {}
    for name in probed[:MAX_PROBED]:
        given_fp16 = flow.returns_when_called(function, {name: make(DTYPE, (FP16,))})
        # a value follows the parameter only if it is float16 when given float16 (``follower``):
        # without such a leaf the bfloat16 run could not change the answer, so it is not run
        given_bf16 = (flow.returns_when_called(function, {name: make(DTYPE, (BF16,))})
                      if _has_leaf_of(given_fp16, FP16) else None)
        probes[name] = (given_fp16, given_bf16)
    return plain, probes, positional


def _has_leaf_of(value: Value | None, dtype: str) -> bool:
    """Some pick of ``value`` (``_pick``: the whole, an item, the element) is a leaf of ``dtype``."""
    if value is None:
        return False
    if value.kind != TUPLE:
        return _follows(value, dtype)
    return any(_follows(item, dtype) for item in value.items or ()) or _follows(value.element, dtype)


def follower(probes: dict, index) -> str | None:
    """The dtype parameter whose dtype the returned value (or its item ``index``) takes."""
    for name, (low, other) in sorted(probes.items()):
        if _follows(_pick(low, index), FP16) and _follows(_pick(other, index), BF16):
            return name
    return None


def _pick(value: Value | None, index):
    """The whole value (index None), a tuple's item, or a comprehension's element ("element")."""
    if value is None:
        return None
    if index is None:
        return value if value.kind != TUPLE else None
    if index == "element":
        return value.element if value.kind == TUPLE and value.info == "comprehension" else None
    items = value.items if value.kind == TUPLE and value.info != "comprehension" else None
    return items[index] if items is not None and index < len(items) else None


def _worth(value: Value | None) -> bool:
    if value is None:
        return False
    if value.kind == TUPLE:
        return any(_worth(item) for item in value.items or ()) or _worth(value.element)
    return value.kind in LEAF_KINDS


def _result(ctx, function: cst.FunctionDef, plain: Value | None, probes: dict, positional: list[str]) -> dict | None:
    def leaf(index) -> dict | None:
        base = _pick(plain, index)
        name = follower(probes, index)
        if name is not None:
            kind = _pick(probes[name][0], index).kind
            return {"kind": kind, "dtypes": sorted(base.dtypes) if base is not None and base.kind == kind else [],
                    "partial": bool(base is None or base.partial or base.kind != kind), **_where(ctx, base, function),
                    "follows": name, "position": positional.index(name) if name in positional else None}
        if base is None or base.kind not in LEAF_KINDS or not base.dtypes:
            return None
        return {"kind": base.kind, "dtypes": sorted(base.dtypes), "partial": base.partial, **_where(ctx, base, function),
                "follows": None, "position": None}

    if plain is not None and plain.kind == TUPLE and plain.info == "comprehension":
        element = leaf("element")
        return {"element": element} if element is not None else None
    if plain is not None and plain.kind == TUPLE and plain.items is not None:
        items = [leaf(index) for index in range(len(plain.items))]
        return {"items": items} if any(items) else None
    value = leaf(None)
    return {"value": value} if value is not None else None


def _follows(value: Value | None, dtype: str) -> bool:
    return value is not None and value.kind in LEAF_KINDS and value.dtypes == frozenset({dtype})


def _where(ctx, value: Value | None, function: cst.FunctionDef) -> dict:
    """The line and text of the value's first origin, and whether its dtype came from NumPy."""
    origin = value.origin if value is not None else None
    source = getattr(origin, "source", origin)  # a NumPy array's origin seen through its conversion
    if origin is None or type(source).__name__ != "Origin":
        return {"line": 0, "text": "", "numpy": False}
    produced = ctx.flow.value_of(origin.node)
    numpy = bool(value.kind == NUMPY or (produced is not None and produced.kind == NUMPY))
    if "_positions" in ctx.__dict__:
        return {"line": origin.line, "text": origin.text, "numpy": numpy}
    # positions cost a codegen of the whole file, which a file without findings never pays: the
    # origin's line is found by its text, searched from the function's ``def``
    code = ctx.code_for(origin.node)
    text = " ".join(code.split())
    text = text if len(text) <= 60 else text[:57] + "..."
    return {"line": _line_of(ctx.lines, function.name.value, code.strip().splitlines()[0] if code.strip() else ""),
            "text": text, "numpy": numpy}


def _line_of(lines: list[str], name: str, first: str) -> int:
    start = next((n for n, line in enumerate(lines) if line.lstrip().startswith((f"def {name}(", f"async def {name}("))),
                 None)
    if start is None or not first:
        return 0
    return next((n + 1 for n in range(start, len(lines)) if first in lines[n]), 0)

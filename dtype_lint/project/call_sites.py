"""What one file's calls pass: the dtypes its own flow computed for each call's arguments.

Read once, after the file's rules ran (only when they needed the dtype flow: a file without a
float16/bfloat16/uint8 spelling passes nothing the project pass could use). The result is keyed
by the call's dotted name (``ssim``, ``metrics.mask_iou``, ``proc``) and lists that name's calls
in source order; ``summary.py`` pairs them with CPython's tree by that order (the k-th call of a
name in libcst's tree is the k-th in CPython's), which gives each its line and its callee.

A call is kept only when it passes something a callee may mishandle: a float16, bfloat16 or
float64 tensor (or that dtype itself, ``dtype=torch.bfloat16``), an 8-bit integer tensor, or when
it runs under a low-precision autocast.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.flow.values import BF16, DTYPE, FP16, FP32, FP64, INT, TENSOR, Value
from dtype_lint.facts.names import dotted_name

RISKY_FLOATS = frozenset({FP16, BF16, FP64})
AUTOCAST_DTYPES = {"float16": FP16, "bfloat16": BF16}


def flow_arguments(ctx) -> dict[str, list]:
    """dotted callee name -> for each of its calls in source order: the call's arguments and
    autocast state (see ``_call``), or None when it passes nothing of interest."""
    flow = ctx.__dict__.get("flow")  # only a flow the rules already computed: no extra cost
    if flow is None:
        return {}
    from dtype_lint.rules.integer_overflow import narrow_int

    if _low_dtype_defaults(ctx):
        # an entry point's default (``def sample(dtype=torch.float16)``) is a configuration its
        # calls run in: the flow once more, with those defaults, for the calls only
        from dtype_lint.facts.flow.interpreter import Interpreter

        flow = Interpreter(ctx, dtype_defaults=True).run()

    found: dict[str, list] = {}
    interesting = False
    for node in ctx.all_nodes:
        if type(node) is not cst.Call:
            continue
        name = dotted_name(node.func)
        if name is None:
            continue
        site = _call(ctx, flow, node, narrow_int)
        interesting = interesting or site is not None
        found.setdefault(name, []).append(site)
    if not interesting:
        return {}
    return {name: sites for name, sites in found.items() if any(sites)}


LOW_DTYPE_NAMES = frozenset({"torch.float16", "torch.half", "torch.bfloat16"})


def _low_dtype_defaults(ctx) -> bool:
    """Whether a top-level function has a parameter defaulting to a low dtype."""
    for statement in ctx.module.body:
        if type(statement) is cst.FunctionDef:
            for param in (*statement.params.params, *statement.params.kwonly_params):
                if param.default is not None and isinstance(param.default, cst.Attribute) \
                        and LOW_DTYPE_NAMES.intersection(ctx.names.qualified_names(param.default)):
                    return True
    return False


def _call(ctx, flow, node: cst.Call, narrow_int) -> dict | None:
    args = []
    risky = False
    position = 0
    for arg in node.args:
        if arg.star:
            break  # later positions are unknown
        at = arg.keyword.value if arg.keyword is not None else position
        if arg.keyword is None:
            position += 1
        value = flow.value_of(arg.value)
        described = _argument(ctx, value, narrow_int)
        if described is None:
            continue
        risky = risky or bool(set(described["dtypes"]) & RISKY_FLOATS or described.get("integer"))
        args.append({"at": at, **described})
    autocast = None
    info = flow.autocast_at(node)
    if info is not None and AUTOCAST_DTYPES.get(info.effective_dtype or ""):
        autocast = {"dtype": AUTOCAST_DTYPES[info.effective_dtype], "conditional": info.enabled is not True}
    if not risky and autocast is None:
        return None
    return {"args": args, "autocast": autocast}


def _argument(ctx, value: Value | None, narrow_int) -> dict | None:
    """A tensor argument's dtypes as JSON: ``{"dtypes": ["fp16"], "partial": False}``, with
    ``integer`` ("uint8") for an 8-bit integer tensor."""
    if value is not None and value.kind == DTYPE and value.dtypes and value.dtypes <= RISKY_FLOATS | {FP32}:
        return {"dtypes": sorted(value.dtypes), "partial": value.partial, "kind": "dtype"}
    if value is None or value.kind != TENSOR or not value.dtypes:
        return None
    described = {"dtypes": sorted(value.dtypes), "partial": value.partial}
    if value.dtypes == {INT}:
        integer = narrow_int(ctx, value)
        if integer is not None:
            described["integer"] = integer
    return described



"""A library object's component in the library's low dtype, given a tensor known to be float32.

A diffusers pipeline loaded with ``torch_dtype=torch.float16`` (or bfloat16) holds its models in
that dtype, the safety checker and the depth estimator among them (facts/lowp_contract.py,
``Contract.dtype_inputs``). It makes their inputs itself, from its ``feature_extractor``: a
transformers image processor called with ``return_tensors="pt"``, whose ``pixel_values`` are
float32 (facts/flow/library.py, ``image_processor_call``), and ``.to(device)`` keeps them float32.
So the pipelines cast them to the pipeline's dtype before the call
(``safety_checker_input.pixel_values.to(dtype)``); one that does not hands a float16 model a
float32 input (huggingface/diffusers 72eae64, 05be622):

    pixel_values = self.feature_extractor(images=image, return_tensors="pt").pixel_values
    pixel_values = pixel_values.to(device=device)          # still float32
    depth_map = self.depth_estimator(pixel_values)          # a float16 DPT: Input type (float) ...

Decided here: the input the call gives the component is float32 on every path (the dtype flow;
an unknown or partial dtype stays silent), no autocast region is around the call (or the region's
context manager is ``contextlib.nullcontext()`` on some path: ``autocast_ctx = nullcontext() if
mps else torch.autocast(...)``), and the file itself shows that the pipeline runs in another
dtype than float32: a ``torch_dtype=torch.float16``/``bfloat16`` it spells (its documented
example), or a tensor the class casts to a dtype known only at run time (``.to(dtype=dtype)``,
``.to(prompt_embeds.dtype)``), which is how a pipeline adapts its inputs to the dtype it was
loaded in. Where the input was last moved with a ``.to(device)`` that gives no dtype, that move
is where the cast belongs.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from dtype_lint.facts.branch_conditions import runs_whenever
from dtype_lint.facts.dtypes import FP32, LOW
from dtype_lint.facts.flow import library as lib
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.own_dtype_components import cast_dtype, class_contract
from dtype_lint.facts.training import keyword, positional, walk

# The file spells the pipeline's low dtype (its documented example, or its own loading code).
_LOW_TORCH_DTYPE = re.compile(r"torch_dtype\s*=\s*torch\.(float16|bfloat16|half)\b")


@dataclasses.dataclass(frozen=True)
class Fp32ComponentInput:
    call: cst.Call  # ``self.depth_estimator(pixel_values)``
    component: str  # ``self.depth_estimator``
    argument: cst.BaseExpression  # the input as written in the call
    moved: cst.Call | None  # ``pixel_values.to(device=device)``: the last move, without a dtype
    evidence: str  # ``it is loaded so at line 703 (`torch_dtype=torch.float16`)``: where the file shows it
    null_context: cst.Call | None  # ``contextlib.nullcontext()`` that leaves the autocast off on a path


def inputs_in(ctx, function: cst.FunctionDef) -> list[Fp32ComponentInput]:
    cls = ctx.enclosing(function, cst.ClassDef)
    if cls is None:
        return []
    contract = class_contract(ctx, cls)
    if contract is None or not contract.dtype_inputs:
        return []
    keywords = dict(contract.dtype_inputs)
    found = []
    evidence: list[str | None] = []  # computed once, when first needed
    for node in walk(function.body):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in keywords and dotted_name(node.func.value) == "self"):
            continue
        argument = next((keyword(node, k) for k in keywords[node.func.attr.value] if keyword(node, k) is not None), None)
        if argument is None:
            argument = positional(node, 0)
        value = ctx.flow.value_of(argument) if argument is not None else None
        if value is None or value.kind != "tensor" or value.dtypes != frozenset({FP32}) or value.partial \
                or value.autocast is not None:
            continue  # unknown, or float32 only on some path: silent
        null_context = None
        if ctx.flow.autocast_at(node) is not None:
            null_context = _null_context(ctx, function, node)
            if null_context is None:
                continue  # the region casts the input for the component's layers
        if not evidence:
            evidence.append(_low_dtype_evidence(ctx, cls))
        if evidence[0] is None:
            continue  # the file never shows the pipeline in another dtype
        found.append(Fp32ComponentInput(node, f"self.{node.func.attr.value}", argument,
                                        _moved_without_dtype(ctx, function, node, argument), evidence[0], null_context))
    return found


def _low_dtype_evidence(ctx, cls: cst.ClassDef) -> str | None:
    """Where the file shows the pipeline runs in a dtype other than float32, as ``line N (`text`)``."""
    spelled = _LOW_TORCH_DTYPE.search(ctx.text)
    if spelled is not None:
        return f"it is loaded so at line {ctx.text.count(chr(10), 0, spelled.start()) + 1} (`{spelled.group(0)}`)"
    for node in walk(cls, into_definitions=True):
        if isinstance(node, cst.Call):
            dtype = cast_dtype(node)
            if dtype is None:
                continue
            constant = lib.dtype_constant(ctx.names, dtype)
            if constant in LOW or constant is None and re.search(r"dtype", ctx.code_for(dtype)):
                text = " ".join(ctx.code_for(node).split())
                return (f"the class casts its inputs to the dtype it runs in, e.g. line {ctx.position(node).start.line}"
                        f" (`{text if len(text) <= 60 else text[:57] + '...'}`)")
    return None


def _moved_without_dtype(ctx, function: cst.FunctionDef, call: cst.Call, argument: cst.BaseExpression) -> cst.Call | None:
    """The ``.to(device)`` (no dtype) the input's name was last assigned from before ``call``, on
    every path to it: ``pixel_values = pixel_values.to(device=device)``,
    ``inputs = self.feature_extractor(...).to(device)`` for ``inputs.pixel_values``."""
    root = argument
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name):
        return None
    order = ctx.source_order
    last = None
    for node in walk(function.body):
        if isinstance(node, cst.Assign) and order(node)[1] < order(call)[0] and any(
                isinstance(t.target, cst.Name) and t.target.value == root.value for t in node.targets):
            if last is None or order(node)[0] > order(last)[0]:
                last = node
    if last is None or not runs_whenever(ctx, last, call):
        return None
    value = last.value
    while isinstance(value, cst.Attribute):  # ``....to(device).pixel_values``
        value = value.value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to" \
            and cast_dtype(value) is None:
        return value
    return None


def _null_context(ctx, function: cst.FunctionDef, call: cst.Call) -> cst.Call | None:
    """``with autocast_ctx:`` around ``call`` where ``autocast_ctx`` is bound in the function to
    ``contextlib.nullcontext()`` on some path: that path runs the call outside autocast."""
    current = ctx.parent(call)
    while current is not None and current is not function:
        if isinstance(current, cst.With):
            for item in current.items:
                if isinstance(item.item, cst.Name):
                    for node in walk(function.body):
                        if isinstance(node, cst.Assign) and any(
                                isinstance(t.target, cst.Name) and t.target.value == item.item.value for t in node.targets):
                            # ``nullcontext()``, or one side of ``nullcontext() if mps else torch.autocast(...)``
                            for part in walk(node.value):
                                if isinstance(part, cst.Call) \
                                        and (dotted_name(part.func) or "").rsplit(".", 1)[-1] == "nullcontext":
                                    return part
        current = ctx.parent(current)
    return None

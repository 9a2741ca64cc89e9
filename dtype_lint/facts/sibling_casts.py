"""A tensor read from an owner whose other tensor the same function casts to ``x``'s dtype.

``mean = self.vae.bn.running_mean.to(latents.dtype)`` says, in the function's own words, that the
tensors of ``self.vae.bn`` may be in another dtype than ``latents`` (a VAE kept in float32 beside
bfloat16 latents, statistics stored in float32). Its sibling ``self.vae.bn.running_var``, read
from the same owner and combined with ``latents`` without that cast, is in the owner's dtype:
where the cast of the first one changes anything, the second one promotes ``latents`` (or, in a
matmul or a convolution, fails). The dtype stays symbolic ("the owner's, not ``latents``'"): the
rules that take this fact state the condition, they never name a dtype the flow does not know.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.numerics import facts as numerics_facts
from dtype_lint.facts.training import walk

# Methods and torch functions through which a tensor keeps its dtype (the sibling is still "the
# owner's dtype" after them): views, reshapes, elementwise math.
_KEEPING_METHODS = frozenset({"view", "reshape", "unsqueeze", "squeeze", "expand", "expand_as", "permute",
                              "transpose", "contiguous", "flatten", "clone", "detach", "sqrt", "rsqrt", "exp",
                              "log", "abs", "clamp", "clamp_min", "clamp_max", "reciprocal", "neg", "t"})
_KEEPING_FUNCTIONS = frozenset({"torch.sqrt", "torch.rsqrt", "torch.exp", "torch.log", "torch.abs",
                                "torch.clamp", "torch.reciprocal", "torch.reshape", "torch.unsqueeze"})
# Calls that set a dtype: a sibling passed through one of them is cast, not left in the owner's.
_SETTING = frozenset({"to", "type", "type_as", "half", "float", "bfloat16", "double"})


@dataclasses.dataclass(frozen=True)
class UncastSibling:
    read: cst.Attribute  # ``self.vae.bn.running_var``: the sibling read without a cast
    cast: cst.Call  # ``self.vae.bn.running_mean....to(latents.dtype)``: the cast of the other one
    owner: str  # ``self.vae.bn``


def uncast_sibling(ctx, expr: cst.BaseExpression, target: str) -> UncastSibling | None:
    """``expr`` holds a tensor read from an owner (``self.vae.bn.running_var``, through views and
    elementwise math) whose other tensor the function casts to ``target``'s dtype (``.to(...,
    target.dtype)``), and nothing on the way casts ``expr``'s."""
    function = ctx.enclosing(expr, cst.FunctionDef)
    if function is None:
        return None
    read = _source_read(ctx, expr, 0)
    if read is None:
        return None
    owner, leaf = read[0], read[1]
    for cast, cast_owner, cast_leaf in _casts_to(ctx, function, target):
        if cast_owner == owner and cast_leaf != leaf:
            return UncastSibling(read[2], cast, owner)
    return None


def _source_read(ctx, expr: cst.BaseExpression, depth: int) -> tuple[str, str, cst.Attribute] | None:
    """(owner, leaf, node) of the attribute read ``expr`` computes its tensor from."""
    if depth > 6:
        return None
    if isinstance(expr, cst.Name):
        reaching = numerics_facts(ctx).reaching(expr)
        if len(reaching) != 1 or reaching[0][1] is not ctx.enclosing(expr, cst.FunctionDef):
            return None
        return _source_read(ctx, reaching[0][0], depth + 1)
    if isinstance(expr, cst.Attribute):
        dotted = dotted_name(expr)
        if dotted is None or dotted.count(".") < 2 or expr.attr.value in ("dtype", "device", "shape", "data"):
            return None  # ``self.weight``: a module's own parameter moves with the module's casts
        return dotted.rsplit(".", 1)[0], expr.attr.value, expr
    if isinstance(expr, cst.BinaryOperation):
        # ``var + eps``: the tensor side keeps its dtype against a python or config scalar
        sides = [s for s in (expr.left, expr.right) if not _scalar(s)]
        return _source_read(ctx, sides[0], depth + 1) if len(sides) == 1 else None
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SETTING:
            return None
        qualified = ctx.names.qualified_names(func)
        if any(q in _KEEPING_FUNCTIONS for q in qualified):
            return _source_read(ctx, expr.args[0].value, depth + 1) if expr.args else None
        if any(q.startswith("torch") for q in qualified):
            return None  # another torch function: its dtype is its own
        if isinstance(func, cst.Attribute) and func.attr.value in _KEEPING_METHODS:
            return _source_read(ctx, func.value, depth + 1)
    return None


def _scalar(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _scalar(expr.expression)
    # ``self.vae.config.batch_norm_eps`` / ``self.eps``: a config number, not a tensor
    dotted = dotted_name(expr) if isinstance(expr, cst.Attribute) else None
    return dotted is not None and (".config." in f".{dotted}." or dotted.rsplit(".", 1)[-1] in ("eps", "epsilon"))


def _casts_to(ctx, function: cst.FunctionDef, target: str):
    """(call, owner, leaf) for ``<owner>.<leaf>[.view(...)...].to(..., target.dtype)`` in ``function``."""
    for node in walk(function.body):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "to"):
            continue
        if not any(_is_dtype_of(arg.value, target) for arg in node.args
                   if arg.keyword is None or arg.keyword.value == "dtype"):
            continue
        receiver = node.func.value
        while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) \
                and receiver.func.attr.value in _KEEPING_METHODS:
            receiver = receiver.func.value
        if isinstance(receiver, cst.Attribute):
            dotted = dotted_name(receiver)
            if dotted is not None and dotted.count(".") >= 2:
                yield node, dotted.rsplit(".", 1)[0], receiver.attr.value


def _is_dtype_of(expr: cst.BaseExpression, target: str) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "dtype" and isinstance(expr.value, cst.Name) \
        and expr.value.value == target

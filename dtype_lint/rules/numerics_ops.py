"""Ops that are numerically fragile in low precision: DTL503 lowp-sensitive-op, DTL505
lowp-accumulation, DTL508 factory-default-dtype."""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from dtype_lint.facts.flow.library import LOWP_TRIGGERS
from dtype_lint.facts.flow.op_results import data_for
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.promoted_uses import only_float32_consumers
from dtype_lint.facts.training import child_nodes, walk
from dtype_lint.findings import Confidence, Edit, Fix, Safety
from dtype_lint.prefilter import POWER_WORD, exact_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.numerics_masks import may_hold_inf
from dtype_lint.facts.numerics import (
    BF16,
    FP16,
    FP32,
    argument,
    autocast_enabled_at,
    call_shape,
    explain,
    facts,
    has_keyword,
    is_simple_reference,
    number,
)

# op -> (dtypes it is fragile in, why). float16 fails by range (max 65504); bfloat16 has
# float32's range but 8 bits of mantissa, which only running reductions make visible. Not here:
# ``norm``/``vector_norm``, whose squares torch sums in float32 (a float16 norm of ten 300s is
# 948.5 where ``pow(2).sum()`` is inf): like ``sum``, they overflow only when the result does;
# ``softmax``, which torch computes max-subtracted in float32 and rounds (it equals the float32
# softmax cast to float16): a probability keeps float16's relative precision, and one below 6e-8
# matters only through a later ``log`` (DTL504's epsilon).
SENSITIVE = {
    "exp": ((FP16,), "exp overflows float16 above 11.09"),
    "expm1": ((FP16,), "expm1 overflows float16 above 11.09"),
    "pow": ((FP16,), "squares overflow float16 above 256 and flush to 0 below 2.4e-4"),
    "square": ((FP16,), "squares overflow float16 above 256 and flush to 0 below 2.4e-4"),
    # torch reduces these in float32 and rounds the result (torch's generated semantics: on a
    # 4096-element float16 input with |x| <= 64, torch.var stays finite where torch.masked.var,
    # which sums explicit squares, overflows): only a spread of activations above 256 makes the
    # variance inf, and std is inf only past 65504. Low confidence (REDUCED_IN_FLOAT32).
    "var": ((FP16,), "the variance, reduced in float32 but returned in float16, is inf for a spread above 256"),
    "std": ((FP16,), "the result is returned in float16 (torch reduces it in float32)"),
    "var_mean": ((FP16,), "the variance, reduced in float32 but returned in float16, is inf for a spread above 256"),
    "std_mean": ((FP16,), "the result is returned in float16 (torch reduces it in float32)"),
    "softmax": ((FP16,), "its scores may hold -inf (a float16 mask overflow), and a row of -inf gives NaN probabilities"),
    "log_softmax": ((FP16,), "float16 log-probabilities lose precision"),
    "prod": ((FP16,), "products overflow float16 quickly"),
    "cumsum": ((FP16, BF16), "running sums stop being exact above 2048 (float16) / 256 (bfloat16)"),
    "softplus": ((FP16,), "near 0 softplus is log(2)/beta, beyond float16's 65504 for beta below 1.06e-5"),
    "sum": ((FP16,), "the sum is returned in float16 and overflows above 65504 where the mean would not"),
    "cumprod": ((FP16, BF16), "running products overflow or lose precision"),
}
# softplus(x, beta) is log(2) / beta at x = 0: above float16's max below this beta.
FP16_SOFTPLUS_BETA = 0.6931471805599453 / 65504
# Accepted spellings: torch.X, torch.linalg.X, torch.nn.functional.X and methods.
QUALIFIED_PREFIXES = ("torch.", "torch.linalg.", "torch.nn.functional.", "torch.special.")


def _qualified_ok(qualified: str | None, name: str) -> bool:
    if qualified is None:
        return True
    return any(qualified == prefix + name for prefix in QUALIFIED_PREFIXES)


class LowpSensitiveOp(Rule):
    """## What it does
    Flags `exp`, `pow`/`**`/`square`, `var`/`std`, `log_softmax`, `prod` and
    `cumsum`/`cumprod` applied, outside an enabled autocast region, to a tensor the dtype flow
    knows is float16 (for `cumsum`/`cumprod` also bfloat16): custom norms written as
    `x.pow(2).mean(-1)`, losses written with `exp`, manual softmax. A float16 cast of a model
    that holds a hand-written norm (a class of the file named `*Norm*` whose `forward` squares
    or takes the variance of its input with no float32 upcast, such as ConvNeXt's channels-first
    LayerNorm, facebookresearch/ConvNeXt#71), run after the cast outside autocast, is reported
    at the cast too (besides the norm's op, where the flow reaches it): `net.half()` is where
    that choice was made, and the cast model may also run in float32 first (a reference pass),
    which leaves the op's own finding at low confidence. `var`/`std` (and a norm whose statistics
    are only those, at the cast) are low confidence: torch reduces them in float32 and rounds the
    result (its generated semantics: `torch.var` of a 4096-element float16 input stays finite
    where `torch.masked.var`, summing explicit squares, overflows), so the variance is inf only
    for a spread of activations above 256, not for one activation 256 away from the mean as
    explicit squares are (autocast leaves `var`/`std` in float16 for the same reason). Ops given
    `dtype=torch.float32`, the numerically stable `exp(x - x.max(...))` and `exp(log_softmax)`,
    the exp of a learned scalar (CLIP's `self.logit_scale = nn.Parameter(torch.ones([]) *
    np.log(1 / 0.07))`: one temperature that training keeps near its start, clamped to log(100)),
    powers below 2 and
    powers of probabilities (`(1 - pt) ** gamma`) are not flagged. `softmax` is flagged only
    when its scores may hold `-inf`: an additive mask filled with `finfo.min` or `-inf` added
    to them (`finfo(float16).min` plus a score below -16 overflows), a `-inf` fill, or a
    `torch.where` fill beyond float16's range (`torch.where(mask, x, -1e30)` writes -inf; a
    float16 `masked_fill(mask, -1e9)` raises instead, DTL501), with no clamp back in between; torch
    computes a float16 softmax of finite scores in float32 and only rounds the result, so a
    `masked_fill(mask, torch.finfo(scores.dtype).min)` before it is fine. `log` and `rsqrt` are
    left out on purpose: their float16 failures come from a vanished epsilon (DTL504); so is
    `norm`, whose squares torch sums in float32 (`x.norm()` is finite wherever the norm is). A float16
    `sum` is flagged only where it is a mean written as a sum, divided afterwards
    (`h.sum(dim=1) / n`, or `pooled = h.sum(1)` then `pooled / n`, pytorch/pytorch#6292): `sum`
    returns float16 and overflows above 65504 where `mean`, reduced in float32, would not;
    flagging every float16 `.sum()` would bury the rest. `F.softplus(x, beta=...)` is flagged
    for a beta below 1.06e-5 (a literal, a constant or `self.beta` from an `__init__` default):
    near 0 softplus is log(2)/beta, beyond float16's range (pytorch/pytorch#187180).
    The message names the tensor's dtype and where it was set. Inside an enabled autocast region
    only the ops autocast does not run in float32 are checked (`var`, `std`, `square`: the query
    `autocast_policy(op)` of torch's generated semantics, docs/torch-semantics.md).

    ## Why is this bad?
    CUDA autocast runs exactly these ops in float32 because float16's range ends at 65504:
    `exp(12)`, `300 ** 2` and the variance of activations above 256 are `inf` in float16, and
    the `inf` becomes NaN in the next normalisation (huggingface/transformers#5651). A model cast
    with `.half()` (or loaded in float16) and run without autocast gets none of that protection.
    bfloat16 keeps float32's range but not its mantissa: a cumulative sum of 5000 ones is 4992.

    ## Example
    ```python
    model = RMSNormModel().half()
    hidden = hidden.half()
    variance = hidden.pow(2).mean(-1, keepdim=True)
    ```

    ## Use instead
    ```python
    variance = hidden.float().pow(2).mean(-1, keepdim=True)
    hidden = (hidden.float() * torch.rsqrt(variance + eps)).to(hidden.dtype)
    ```

    ## Fix safety
    No fix: where to cast back to the low-precision dtype depends on the code around the op.
    Confidence is medium when every path the flow knows makes the tensor float16 (a `.half()`
    model's outputs included) and low when a union also holds a wide dtype; never high,
    because the overflow depends on the values at run time.
    """

    code = "DTL503"
    name = "lowp-sensitive-op"
    summary = "Overflow-prone op (exp, pow, var, log_softmax, cumsum...) on a float16 tensor outside autocast"
    queries = (
        "the dtype flow: the dtype of the op's tensor, and every module cast (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the enabled autocast region around a node, as the dtype flow records it (facts/dtypes.py `autocast_at`)",
        "what autocast does to the op, from torch's generated semantics (facts/flow/op_results.py, facts/semantics.py)",
        "the values that reach a name (facts/numerics.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    triggers = LOWP_TRIGGERS  # needs a float16/bfloat16 value (see facts/flow/library.py)
    # One of the ops, by name, or the ** operator.
    required_triggers = (tuple(exact_word(name) for name in sorted(SENSITIVE)) + (POWER_WORD,),)
    valid = (
        # float32 on purpose before the sensitive ops.
        "import torch\nx = torch.randn(4, 64, dtype=torch.float16)\nvariance = x.float().pow(2).mean(-1, keepdim=True)\n",
        # inside autocast CUDA runs softmax in float32.
        "import torch\nx = torch.randn(4, 64, dtype=torch.float16)\nwith torch.autocast('cuda', dtype=torch.float16):\n"
        "    p = torch.softmax(x, dim=-1)\n",
        # bfloat16 has float32's range; exp is fine.
        "import torch\nx = torch.randn(4, 64, dtype=torch.bfloat16)\ny = torch.exp(x)\n",
        # an upcasting softmax, and a max-shifted exp.
        "import torch\nx = torch.randn(4, 64).half()\np = x.softmax(-1, dtype=torch.float32)\ne = torch.exp(x - x.amax(-1, keepdim=True))\n",
    )
    invalid = (
        Invalid("import torch\nh = torch.randn(4, 64).half()\nvariance = h.pow(2).mean(-1, keepdim=True)\n"),
        Invalid("import torch\nlogits = torch.randn(4, 10, dtype=torch.float16)\nz = torch.exp(logits)\n"),
        Invalid("import torch\nmask = torch.ones(2, 5000, dtype=torch.bfloat16)\npos = mask.cumsum(-1)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        shape = call_shape(self.ctx, node)
        if shape is None or shape.name not in SENSITIVE or not _qualified_ok(shape.qualified, shape.name):
            return
        if has_keyword(node, "dtype"):
            return
        tensor = shape.receiver if shape.receiver is not None else (node.args[0].value if node.args else None)
        if tensor is None:
            return
        if shape.name == "pow":
            exponent = argument(node, "exponent", 0 if shape.receiver is not None else 1)
            if exponent is None or not self._big_exponent(exponent.value):
                return
        if shape.name in ("exp", "expm1") and (_is_max_shifted(self.ctx, tensor) or _is_learned_scalar(self.ctx, tensor)):
            return
        if shape.name == "pow" and _is_bounded(self.ctx, tensor):
            return
        if shape.name == "softmax" and not may_hold_inf(self.ctx, tensor):
            return  # torch's float16 softmax reduces in float32: only a -inf row breaks it
        if shape.name == "softplus" and not self._tiny_beta(node, shape):
            return
        if shape.name == "sum" and not (_divided_afterwards(self.ctx, node) and self._cast_float16(tensor)):
            return  # a float16 sum is only flagged where it is a mean written as sum / n
        self._check(node, tensor, shape.name, self.ctx.code_for(node.func).strip())

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Power) and self._big_exponent(node.right) and not _is_bounded(self.ctx, node.left):
            self._check(node, node.left, "pow", "**")

    def leave_Module(self, original_node: cst.Module) -> None:
        """``model.half()`` of a model that holds a hand-written norm (a class of this file named
        ``*Norm*`` whose forward squares or takes the variance of its input without a float32
        upcast: ConvNeXt's channels-first LayerNorm, facebookresearch/ConvNeXt#71), when the cast
        model is then run outside autocast: reported at the cast, where the choice was made."""
        norms = _handwritten_norms(self.ctx)
        if not norms:
            return
        seen: set[int] = set()
        for cast in _float16_module_casts(self.ctx):
            if id(cast.node) in seen or autocast_enabled_at(self.ctx, cast.node):
                continue
            held = _classes_held(self.ctx, cast)
            found = next(((name, op) for name, op in norms.items() if name in held), None)
            if found is None or not _run_after(self.ctx, cast):
                continue
            seen.add(id(cast.node))
            name, op = found
            # ``x.var()``/``x.std()``: torch reduces a float16 input in float32 and rounds only the
            # result, so no activation is squared in float16; the variance overflows only for a
            # spread of activations above 256 (explicit squares, ``(x - u).pow(2)``, for one
            # activation 256 away from the mean). Low at the cast: whether a model's activations
            # spread that far is its own; the op's finding, where the flow reaches it, stays.
            reduced = isinstance(op, cst.Call) and isinstance(op.func, cst.Attribute) \
                and op.func.attr.value in REDUCED_IN_FLOAT32
            overflow = ("the variance, reduced in float32 but returned in float16, is inf for a spread of"
                        " activations above 256" if reduced else
                        "the squares of activations above 256 overflow to inf")
            # reported at the cast even where the flow also reached the norm's op: the cast is the
            # caller's choice (a float32 model under autocast fixes it there), the op the norm's
            # author's; and the op's own finding is low confidence (hidden) where the forward also
            # runs in float32 (a reference pass before the cast)
            self.report(
                cast.node,
                f"this casts `{cast.target}` to float16, and it holds `{name}`, a hand-written norm whose statistics"
                f" (`{self.ctx.code_for(op).strip()}`, line {self.ctx.position(op).start.line}) are then computed in"
                f" float16: {overflow} and the normalised output is NaN or"
                " wrong; compute the norm in float32 (`x.float()` inside it, cast back at the end), or keep the model"
                " float32 under autocast",
                confidence=Confidence.LOW if reduced else Confidence.MEDIUM,
            )

    def _cast_float16(self, tensor: cst.BaseExpression) -> bool:
        """float16 on every path, and not an autocast output (whose dtype is the last op's:
        a model ending in LayerNorm returns float32 under autocast)."""
        value = self.ctx.flow.value_of(tensor)
        return value is not None and value.certain and value.dtype == FP16 and value.autocast is None

    def _tiny_beta(self, node: cst.Call, shape) -> bool:
        """``F.softplus(x, beta=1e-6)``: log(2) / beta exceeds float16's range (pytorch#187180)."""
        beta = argument(node, "beta", 0 if shape.receiver is not None else 1)
        found = number(self.ctx, beta.value) if beta is not None else None
        return found is not None and 0 < found.value < FP16_SOFTPLUS_BETA

    def _big_exponent(self, expr: cst.BaseExpression) -> bool:
        found = number(self.ctx, expr)
        return found is not None and found.value >= 2

    def _check(self, node: cst.CSTNode, tensor: cst.BaseExpression, op: str, spelled: str) -> None:
        risky, why = SENSITIVE[op]
        value = self.ctx.flow.value_of(tensor)
        if value is None or value.kind not in ("tensor", "unknown") or not value.dtypes:
            return
        if value.dtypes <= frozenset(risky):
            # low precision on every path the flow knows (a cast model's outputs included)
            confidence = Confidence.MEDIUM
        elif value.may_be(*risky):
            confidence = Confidence.LOW
        else:
            return
        if autocast_enabled_at(self.ctx, node) and self._autocast_runs_in_float32(op, node):
            return
        if op in REDUCED_IN_FLOAT32:
            confidence = Confidence.LOW  # no square is taken in float16; a spread above 256 is the model's
        dtype = next(d for d in risky if value.may_be(d))
        message = (
            f"`{spelled}` on `{self.ctx.code_for(tensor).strip()}`, which is {explain(value, dtype)}, "
            f"outside autocast: {why}; compute it in float32 (`.float()`, or `dtype=torch.float32`)"
        )
        self.report(node, message, confidence=confidence)


    def _autocast_runs_in_float32(self, op: str, node: cst.CSTNode) -> bool:
        """Whether autocast runs ``op`` in float32 (torch's semantics: ``exp``, ``softmax``,
        ``pow``, ``norm``, ``cumsum``, ``prod``); ``var``, ``std`` and ``square`` it does not, so
        inside a region they still see a float16 activation. Unknown: assume it does (silence)."""
        data = data_for(self.ctx)
        if data is None:
            return True
        device = None
        region = self.ctx.flow.autocast_at(node)
        if region is not None and getattr(region, "device", None) in ("cpu", "cuda"):
            device = region.device
        names = (f"torch.{op}", f"Tensor.{op}", f"torch.linalg.{op}")
        known = [data.autocast_policy(name, device or "cuda") for name in names if data.entry(name) is not None]
        return not known or "fp32" in known


NORM_CLASS = re.compile(r"norm", re.IGNORECASE)
STATISTICS = frozenset({"pow", "square", "var", "std", "var_mean", "std_mean"})
# Reductions torch computes in float32 for a float16 input (ATen's accumulate type), rounding
# only the result: a hand-written norm built on them squares nothing in float16.
REDUCED_IN_FLOAT32 = frozenset({"var", "std", "var_mean", "std_mean"})
UPCASTS = re.compile(r"\.float\(\)|float32|\.double\(\)|dtype=torch\.float")


def _handwritten_norms(ctx) -> dict[str, cst.CSTNode]:
    """Classes of this file named like a norm whose ``forward`` computes statistics (a power of 2
    or more, a variance) with no float32 upcast anywhere in it: class name -> that op (an
    explicit square rather than a variance, which torch reduces in float32)."""
    found: dict[str, cst.CSTNode] = {}
    for node in ctx.all_nodes:
        if not isinstance(node, cst.ClassDef) or not NORM_CLASS.search(node.name.value):
            continue
        forward = next((s for s in node.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"), None)
        if forward is None or UPCASTS.search(ctx.code_for(forward)):
            continue
        for inner in walk(forward):
            if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Power):
                exponent = number(ctx, inner.right)
                if exponent is not None and exponent.value >= 2:
                    found[node.name.value] = inner
                    break
            if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value in STATISTICS:
                if inner.func.attr.value == "pow":
                    exponent = argument(inner, "exponent", 0)
                    value = number(ctx, exponent.value) if exponent is not None else None
                    if value is None or value.value < 2:
                        continue
                if inner.func.attr.value in REDUCED_IN_FLOAT32:
                    found.setdefault(node.name.value, inner)  # an explicit square later in forward wins
                    continue
                found[node.name.value] = inner
                break
    return found


@dataclasses.dataclass(frozen=True)
class _ModuleCast:
    node: cst.Call
    target: str


def _float16_module_casts(ctx) -> list[_ModuleCast]:
    """The flow's module casts to float16, and casts chained on a construction whose result is
    named (``tower = Tower().half()``)."""
    found = {id(c.node): _ModuleCast(c.node, c.target) for c in ctx.flow.module_casts if FP16 in c.dtypes}
    for node in ctx.all_nodes:
        if id(node) in found or not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                                     and node.func.attr.value in ("half", "to", "type")):
            continue
        value, receiver = ctx.flow.value_of(node), ctx.flow.value_of(node.func.value)
        parent = ctx.parent(node)
        if value is None or value.kind != "module" or FP16 not in value.dtypes or not isinstance(parent, cst.Assign):
            continue
        if receiver is not None and FP16 in receiver.dtypes:
            continue
        names = [t.target.value for t in parent.targets if isinstance(t.target, cst.Name)]
        if names:
            found[id(node)] = _ModuleCast(node, names[0])
    return list(found.values())


def _classes_held(ctx, cast) -> set[str]:
    """Names of the classes of this file the cast module is made of: the calls in the
    expression that built it, and, for each class or builder function of the file among them,
    the calls in its ``__init__`` or body (transitively)."""
    built = _construction(ctx, cast)
    if built is None:
        return set()
    classes = {n.name.value: n for n in ctx.all_nodes if isinstance(n, cst.ClassDef)}
    # a builder function of the file (``def build_stem(): return nn.Sequential(...)``) holds what it builds
    builders = {s.name.value: s for s in ctx.module.body if isinstance(s, cst.FunctionDef)}
    pending, held, expanded = [built], set(), set()
    while pending:
        for call in (n for n in walk(pending.pop()) if isinstance(n, cst.Call)):
            name = call.func.value if isinstance(call.func, cst.Name) else None
            if name in builders and name not in classes and name not in expanded:
                expanded.add(name)
                pending.append(builders[name])
            elif name in classes and name not in held:
                held.add(name)
                init = next((s for s in classes[name].body.body if isinstance(s, cst.FunctionDef)
                             and s.name.value == "__init__"), None)
                if init is not None:
                    pending.append(init)
    return held


def _construction(ctx, cast) -> cst.CSTNode | None:
    """The expression the cast module was built by: the receiver chain of the cast itself
    (``Net().half()``), or the latest assignment of its name before the cast."""
    receiver = cast.node.func.value if isinstance(cast.node.func, cst.Attribute) else None
    while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        receiver = receiver.func.value  # ``model.to(device).eval().half()``
    if isinstance(receiver, cst.Call):
        return receiver
    if not isinstance(receiver, cst.Name):
        return None
    start = ctx.source_order(cast.node)[0]
    earlier = [b for b in facts(ctx).scope_of(cast.node).all(receiver.value) if b.end < start]
    return earlier[-1].value if earlier else None


def _run_after(ctx, cast) -> bool:
    """The cast module (its name, or the name its result is bound to) is called after the cast."""
    names = {cast.target}
    parent = ctx.parent(cast.node)
    if isinstance(parent, cst.Assign):
        names |= {t.target.value for t in parent.targets if isinstance(t.target, cst.Name)}
    start = ctx.source_order(cast.node)[1]
    scope = ctx.enclosing(cast.node, cst.FunctionDef) or ctx.module
    for node in walk(scope):
        if isinstance(node, cst.Call) and ctx.source_order(node)[0] > start:
            callee = node.func
            if isinstance(callee, (cst.Name, cst.Attribute)) and ctx.code_for(callee).strip() in names:
                return True
    return False


def _divided_afterwards(ctx, node: cst.Call) -> bool:
    """``x.sum(dim) / n``, or ``pooled = x.sum(dim)`` then ``pooled / n``: a mean written as a
    sum, whose float16 intermediate overflows where ``x.mean(dim)`` (reduced in float32) would not."""
    parent = ctx.parent(node)
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Divide) and parent.left is node:
        return True
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
        return False
    name = parent.targets[0].target.value
    scope = ctx.enclosing(node, cst.FunctionDef) or ctx.module
    for candidate in walk(scope):
        if isinstance(candidate, cst.BinaryOperation) and isinstance(candidate.operator, cst.Divide) \
                and isinstance(candidate.left, cst.Name) and candidate.left.value == name \
                and any(value is node for value, _ in facts(ctx).reaching(candidate.left)):
            return True
    return False


def _definitions(ctx, tensor: cst.BaseExpression) -> list[cst.BaseExpression]:
    """``tensor`` and, for a local name, the expressions assigned to it that reach here."""
    if isinstance(tensor, cst.Name):
        return [tensor] + [value for value, _ in facts(ctx).reaching(tensor)]
    return [tensor]


# Names that hold log-probabilities (``logps``, ``log_probs``, ``token_logprobs``): <= 0 by definition.
_KEEPS_VALUES = frozenset({"half", "float", "bfloat16", "to", "type", "detach", "clone", "contiguous", "view", "reshape", "squeeze", "unsqueeze"})
LOG_PROBABILITIES = re.compile(r"(^|_)(log_?p(rob)?s?|log_?likelihoods?)$", re.IGNORECASE)


def _is_max_shifted(ctx, tensor: cst.BaseExpression) -> bool:
    """``x - x.max(-1, keepdim=True).values`` / ``x - amax`` / ``x - logsumexp``: at most 0."""
    named = tensor
    while isinstance(named, cst.Call) and isinstance(named.func, cst.Attribute) and named.func.attr.value in _KEEPS_VALUES:
        named = named.func.value  # ``logps.half()``, ``logps[:, 1:].contiguous()``: still log-probabilities
    while isinstance(named, cst.Subscript):
        named = named.value
    named = named.attr if isinstance(named, cst.Attribute) else named
    if isinstance(named, cst.Name) and LOG_PROBABILITIES.search(named.value):
        return True  # ``per_token_logps.exp()``: a log-probability is <= 0, its exp <= 1
    for candidate in _definitions(ctx, tensor):
        if isinstance(candidate, cst.BinaryOperation) and isinstance(candidate.operator, cst.Subtract):
            text = ctx.code_for(candidate.right)
            if any(word in text for word in ("max(", "amax(", "logsumexp(", ".max")):
                return True
        if isinstance(candidate, cst.Call):
            # log-probabilities are <= 0: exp of them is a probability
            text = ctx.code_for(candidate.func)
            if any(word in text for word in ("log_softmax", "logsigmoid", "log_sigmoid")):
                return True
    return False


# A scalar-shaped factory: ``torch.ones([])``, ``torch.zeros(())``, ``torch.ones(1)``, ``torch.tensor(2.65)``.
_SCALAR_FACTORY = re.compile(
    r"torch\.(ones|zeros|full|empty)\(\s*(\[\s*\]|\(\s*\)|\[\s*1\s*\]|1\s*[,)])|torch\.tensor\(\s*[^\[\s]"
)


def _is_learned_scalar(ctx, tensor: cst.BaseExpression) -> bool:
    """``self.logit_scale`` built as ``nn.Parameter(torch.ones([]) * np.log(1 / 0.07))``: a learned
    temperature or scale, one number that training keeps near its start (CLIP clamps it to
    log(100)), not activations that grow with the data; its exp overflows float16 only above 11.09."""
    for candidate in _definitions(ctx, tensor):
        if not (isinstance(candidate, cst.Attribute) and isinstance(candidate.value, cst.Name)
                and candidate.value.value == "self"):
            continue
        cls = ctx.enclosing(candidate, cst.ClassDef)
        if cls is None:
            continue
        for node in walk(cls, into_definitions=True):
            if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.value, cst.Call)):
                continue
            target = node.targets[0].target
            if (isinstance(target, cst.Attribute) and ctx.code_for(target) == f"self.{candidate.attr.value}"
                    and ctx.names.matches(node.value.func, "torch.nn.Parameter") and node.value.args
                    and _SCALAR_FACTORY.search(ctx.code_for(node.value.args[0].value))):
                return True
    return False


def _is_bounded(ctx, base: cst.BaseExpression) -> bool:
    """A base known to lie in [0, 1]: probabilities (softmax/sigmoid) and their complements
    (``1 - pt``, as in focal losses); squaring them cannot overflow."""
    for candidate in _definitions(ctx, base):
        if isinstance(candidate, cst.BinaryOperation) and isinstance(candidate.operator, cst.Subtract):
            one = number(ctx, candidate.left)
            if one is not None and one.value == 1:
                return True
        if isinstance(candidate, cst.Call):
            text = ctx.code_for(candidate.func)
            if any(word in text for word in ("softmax", "sigmoid")):
                return True
    return False


# -- DTL505 ------------------------------------------------------------------------------------
def _in_loop(ctx, node: cst.CSTNode) -> bool:
    loop = ctx.enclosing(node, cst.For, cst.While, cst.FunctionDef)
    return isinstance(loop, (cst.For, cst.While))


class LowpAccumulation(Rule):
    """## What it does
    Flags a running sum in a loop, `total += loss` or `total = total + loss`, where the added
    tensor is float16 or bfloat16 according to the dtype flow (a loss computed by a `.half()`
    model outside autocast, a bfloat16 metric) and the accumulator is not a float32 tensor (a
    Python `0`/`0.0` turns into a tensor of the added dtype on the first step). Additions of
    `.item()` or `.float()` values are float32 or Python floats and are not flagged; a
    transformers `outputs.loss` is reported only at low confidence, because those models
    compute their loss in float32 even when loaded in half precision.

    ## Why is this bad?
    Once the sum is large, each addend is smaller than half a unit in the last place and
    vanishes: 10,000 additions of 0.1 give 256 in float16; in bfloat16 a sum stops growing at
    a few hundred. Logged epoch losses, accuracy counters and EMA statistics come out wrong
    without any error (kvablack/ddpo-pytorch#8).

    ## Example
    ```python
    total_loss = 0.0
    for batch in loader:
        loss = criterion(model(batch["x"]), batch["y"])  # float16 model, no autocast
        total_loss += loss.detach()
    ```

    ## Use instead
    ```python
        total_loss += loss.detach().float()   # or loss.item()
    ```

    ## Fix safety
    Unsafe: it appends `.float()` to the added value, so the accumulator becomes a float32
    tensor; code that relied on its low-precision dtype (rare for a sum) changes. Medium
    confidence when the addend is low precision on every path, low otherwise.
    """

    code = "DTL505"
    name = "lowp-accumulation"
    summary = "Running sum of float16/bfloat16 tensors in a loop"
    queries = (
        "the dtype flow: the dtype of the added tensor and of the accumulator (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the values that reach the added name, to leave out `.item()` and `.float()` values (facts/numerics.py)",
    )
    fix_safety = Safety.UNSAFE
    triggers = LOWP_TRIGGERS  # needs a float16/bfloat16 value (see facts/flow/library.py)
    valid = (
        "import torch\nlosses = [torch.rand((), dtype=torch.float16) for _ in range(3)]\ntotal = 0.0\n"
        "for loss in losses:\n    total += loss.item()\n",
        "import torch\ntotal = torch.zeros((), dtype=torch.float32)\nfor _ in range(10):\n"
        "    loss = torch.rand((), dtype=torch.float16)\n    total += loss\n",
        # not in a loop
        "import torch\nloss = torch.rand((), dtype=torch.bfloat16)\ntotal = 0.0\ntotal += loss\n",
        # rebuilt every iteration, then one addition (lerobot's groot: not a running sum)
        "import torch\nfor step in range(4):\n    features = torch.rand(8, dtype=torch.bfloat16)\n"
        "    features = features + torch.rand(8, dtype=torch.bfloat16)\n",
        # cast back after each delta (sd-scripts' LoRA merge): nothing is summed in float16 across iterations
        "import torch\nw = torch.zeros(4, dtype=torch.float8_e4m3fn)\nfor delta in deltas:\n    w = w.to(torch.float16)\n"
        "    w = w + torch.rand(4, dtype=torch.float16)\n    w = w.to(torch.float8_e4m3fn)\n",
    )
    invalid = (
        Invalid(
            "import torch\ntotal = 0.0\nfor _ in range(10):\n    loss = torch.rand((), dtype=torch.float16)\n    total += loss\n",
            fixed="import torch\ntotal = 0.0\nfor _ in range(10):\n    loss = torch.rand((), dtype=torch.float16)\n    total += loss.float()\n",
        ),
        Invalid(
            "import torch\nrunning = 0\nfor step in range(100):\n    acc = torch.rand(8).bfloat16().mean()\n    running = running + acc\n",
            fixed="import torch\nrunning = 0\nfor step in range(100):\n    acc = torch.rand(8).bfloat16().mean()\n    running = running + acc.float()\n",
        ),
    )

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._check(node, node.target, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.value, cst.BinaryOperation):
            return
        target = node.targets[0].target
        value = node.value
        if isinstance(value.operator, cst.Add) and _same_reference(target, value.left):
            self._check(node, value.left, value.right)

    def _check(self, node: cst.CSTNode, target: cst.BaseExpression, added: cst.BaseExpression) -> None:
        if not isinstance(target, (cst.Name, cst.Attribute)) or not _in_loop(self.ctx, node):
            return
        if _rebound_in_loop(self.ctx, node, target):
            return
        value = self.ctx.flow.value_of(added)
        if value is None or value.kind != "tensor" or not value.dtypes:
            return
        if value.dtypes <= frozenset({FP16, BF16}) and not self._model_loss(added):
            confidence = Confidence.MEDIUM
        elif value.may_be(FP16, BF16):
            confidence = Confidence.LOW
        else:
            return
        accumulator = self.ctx.flow.value_of(target)
        if accumulator is not None and accumulator.kind == "tensor" and accumulator.only(FP32, "fp64"):
            return
        dtype = FP16 if value.may_be(FP16) else BF16
        name = "float16" if dtype == FP16 else "bfloat16"
        message = (
            f"`{self.ctx.code_for(target).strip()}` accumulates `{self.ctx.code_for(added).strip()}`, which is "
            f"{explain(value, dtype)}, in {name}: once the sum is large each addend rounds away; "
            "add `.float()` (or `.item()`) to the addend"
        )
        self.report(node, message, confidence=confidence, fix=self._fix(added))

    def _model_loss(self, added: cst.BaseExpression) -> bool:
        """``outputs.loss`` / ``outputs["loss"]`` (directly or through a name): transformers
        models compute their loss in float32 even when loaded in half precision."""
        candidates = [added]
        if isinstance(added, cst.Name):
            candidates += [value for value, _ in facts(self.ctx).reaching(added)]
        for candidate in candidates:
            while isinstance(candidate, cst.Call) and isinstance(candidate.func, cst.Attribute):
                candidate = candidate.func.value  # outputs.loss.detach()
            if isinstance(candidate, cst.Attribute) and candidate.attr.value == "loss":
                return True
            if isinstance(candidate, cst.Subscript) and "loss" in self.ctx.code_for(candidate.slice[0]):
                return True
        return False

    def _fix(self, added: cst.BaseExpression) -> Fix:
        text = self.ctx.code_for(added).strip()
        simple = isinstance(added, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not added.lpar
        content = f"{text}.float()" if simple else f"({text}).float()" if not added.lpar else f"{text}.float()"
        return Fix(Safety.UNSAFE, (self.replace(added, content),), "accumulate in float32")


def _rebound_in_loop(ctx, node: cst.CSTNode, target: cst.BaseExpression) -> bool:
    """The loop body also assigns the accumulator otherwise than by adding to it: rebuilt every
    iteration (lerobot's ``features = encoder(...)`` then ``features = features + pos``) or cast
    back each time (sd-scripts' LoRA merge: ``w = w.to(float16)``, one delta added, ``w =
    w.to(original_dtype)``). Then no sum is carried from one iteration to the next in low
    precision: it is one addition, not a running sum."""
    loop = ctx.enclosing(node, cst.For, cst.While)
    name = dotted_name(target)
    for other in _assignments_in(loop.body):
        if other is node:
            continue
        if isinstance(other, cst.AugAssign):
            continue  # another accumulation into it
        if isinstance(other, cst.Assign) and isinstance(other.value, cst.BinaryOperation) \
                and isinstance(other.value.operator, cst.Add) and dotted_name(other.value.left) == name:
            continue
        targets = [t.target for t in other.targets] if isinstance(other, cst.Assign) else [other.target]
        if any(dotted_name(t) == name for t in targets):
            return True
    return False


def _assignments_in(body: cst.CSTNode):
    """The assignments in a loop body, nested blocks included, nested functions not."""
    stack = [body]
    while stack:
        node = stack.pop()
        for child in child_nodes(node):
            if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            if isinstance(child, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                yield child
            stack.append(child)


def _same_reference(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    from dtype_lint.facts.names import dotted_name

    left, right = dotted_name(a), dotted_name(b)
    return left is not None and left == right


# -- DTL508 ------------------------------------------------------------------------------------
FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn", "full", "tensor", "linspace", "logspace", "eye"})
COMBINERS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack", "where", "add", "mul", "sub"})


def combined_operands(ctx, node: cst.Call) -> list[cst.BaseExpression] | None:
    """The tensors a combining call (``torch.cat([a, b])``, ``torch.where(c, a, b)``, ``a.add(b)``)
    puts into one result; None for any other call."""
    shape = call_shape(ctx, node)
    if shape is None or shape.qualified is None or shape.name not in COMBINERS:
        return None
    operands: list[cst.BaseExpression] = []
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value not in ("input", "other", "tensors"):
            continue
        if isinstance(arg.value, (cst.List, cst.Tuple)):
            operands.extend(element.value for element in arg.value.elements)
        else:
            operands.append(arg.value)
    if shape.name == "where" and operands:
        operands = operands[1:]  # the condition is bool: it takes no part in the result's dtype
    return operands


class CombiningRule(Rule):
    """A rule about the tensors one op puts into one result: arithmetic (`a + b`) and the
    combining calls of `combined_operands`; subclasses implement `_combine(node, operands)`."""

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)):
            self._combine(node, [node.left, node.right])

    def visit_Call(self, node: cst.Call) -> None:
        operands = combined_operands(self.ctx, node)
        if operands is not None:
            self._combine(node, operands)

    def _combine(self, node: cst.CSTNode, operands: list[cst.BaseExpression]) -> None:
        raise NotImplementedError

    def _is_default_factory(self, call: cst.Call) -> bool:
        """``torch.zeros(...)`` & co. without ``dtype=``/``out=``, not 0-dim, float-valued."""
        shape = call_shape(self.ctx, call)
        if shape is None or shape.qualified != f"torch.{shape.name}" or shape.name not in FACTORIES:
            return False
        if has_keyword(call, "dtype") or has_keyword(call, "out") or not call.args or _zero_dim(call, shape.name):
            return False
        if shape.name == "full":
            fill = argument(call, "fill_value", 1)
            return fill is not None and _is_float_literal(fill.value)
        return True


class FactoryDefaultDtype(CombiningRule):
    """## What it does
    Flags a float32 tensor that comes from a factory called without `dtype=` (`torch.zeros`,
    `ones`, `full`, `empty`, `rand`, `randn`, `linspace`, `eye`, `torch.tensor([floats])`) and
    is combined, outside autocast, with a tensor the dtype flow knows is float16 or bfloat16: as
    an operand of `+ - * /`, or in `torch.cat`/`stack`/`where`. The flow supplies where the
    float32 came from, so the factory may sit in a helper or a buffer table. The finding is on
    the factory when the fix can edit it (same function, the other tensor in scope there), else
    on the promoted operand, and the message names both lines.
    0-dim factories (`torch.tensor(1.5)`, `torch.zeros(())`) are not flagged: they do not
    promote. Inside autocast the promotion is undone by the next autocast op, so it is skipped.
    Skipped too where every use of the result, followed through the function, ends in a consumer
    that takes float32: a loss, `.float()`, a module the file runs under autocast
    (`accelerator.prepare`) or knows is float32 (diffusers' offset noise fed to the trained UNet
    and an MSE loss; facts/promoted_uses.py).

    ## Why is this bad?
    Factories follow the default dtype (float32), and binary ops and `cat` promote to the wider
    dtype: `hidden + torch.randn(hidden.shape)` quietly turns a float16 activation into float32.
    The next float16 layer then raises `mat1 and mat2 must have the same dtype`, or, if
    everything downstream promotes too, the model silently runs (and stores) in float32.

    ## Example
    ```python
    noise = torch.randn(latents.shape, device=latents.device)  # float32
    latents = latents + sigma * noise                            # latents: float16
    ```

    ## Use instead
    ```python
    noise = torch.randn(latents.shape, device=latents.device, dtype=latents.dtype)
    ```

    ## Fix safety
    Unsafe: it adds `dtype=<other>.dtype` to the factory, so the factory's values are drawn or
    rounded in the low-precision dtype (random streams differ). Offered when the other operand
    is a plain name or attribute already in scope at the factory. Confidence is high when the
    other tensor is low precision on every path, medium for a union.
    """

    code = "DTL508"
    name = "factory-default-dtype"
    summary = "Factory without dtype= (float32) combined with a float16/bfloat16 tensor"
    queries = (
        "the dtype flow: the dtypes of the two operands and where the float32 one was made (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the enabled autocast region around a node, as the dtype flow records it (facts/dtypes.py `autocast_at`)",
        "where the promoted result goes: whether every use ends in a loss, `.float()` or a float32/autocast module (facts/promoted_uses.py)",
    )
    fix_safety = Safety.UNSAFE
    triggers = LOWP_TRIGGERS  # needs a float16/bfloat16 value (see facts/flow/library.py)
    # The float32 side is one of the torch factories below, called without dtype=.
    required_triggers = (tuple(exact_word(name) for name in sorted(FACTORIES)),)
    valid = (
        "import torch\nh = torch.randn(4, 8, dtype=torch.float16)\nnoise = torch.randn(4, 8, dtype=h.dtype)\ny = h + noise\n",
        "import torch\nh = torch.randn(4, 8, dtype=torch.float16)\ny = h * torch.tensor(0.5)\n",
        "import torch\nh = torch.randn(4, 8)\ny = torch.cat([h, torch.zeros(4, 1)], dim=-1)\n",
    )
    invalid = (
        Invalid(
            "import torch\nlatents = torch.randn(1, 4, 64, 64).half()\nnoise = torch.randn(latents.shape)\n"
            "latents = latents + noise\n",
            fixed="import torch\nlatents = torch.randn(1, 4, 64, 64).half()\nnoise = torch.randn(latents.shape, dtype=latents.dtype)\n"
            "latents = latents + noise\n",
        ),
        Invalid(
            "import torch\nh = torch.randn(2, 16, dtype=torch.bfloat16)\nh = torch.cat([h, torch.zeros(2, 1)], dim=-1)\n",
            fixed="import torch\nh = torch.randn(2, 16, dtype=torch.bfloat16)\nh = torch.cat([h, torch.zeros(2, 1, dtype=h.dtype)], dim=-1)\n",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()

    def _combine(self, node: cst.CSTNode, operands: list[cst.BaseExpression]) -> None:
        values = [(operand, self.ctx.flow.value_of(operand)) for operand in operands]
        low = [
            (operand, value)
            for operand, value in values
            if value is not None and value.kind == "tensor" and value.may_be(FP16, BF16) and not value.may_be("fp64")
        ]
        if not low:
            return
        for operand, value in values:
            if value is None or value.kind != "tensor" or not value.only(FP32) or id(operand) in self._reported:
                continue
            origin = value.origin_of(FP32)
            factory = origin.node if origin is not None else None
            if not isinstance(factory, cst.Call) or not self._is_default_factory(factory):
                continue
            if autocast_enabled_at(self.ctx, node):
                return
            if only_float32_consumers(self.ctx, node):
                return  # the result only reaches a loss, `.float()` or a float32/autocast module
            other, other_value = low[0]
            certain = other_value.only(FP16) or other_value.only(BF16)
            if id(factory) in self._reported:
                continue
            self._reported.add(id(operand))
            self._report(operand, factory, other, other_value, Confidence.HIGH if certain else Confidence.MEDIUM)

    def _report(self, operand, factory: cst.Call, other, value, confidence) -> None:
        name = self.ctx.code_for(factory.func).strip()
        other_text = self.ctx.code_for(other).strip()
        dtype = FP16 if value.may_be(FP16) else BF16
        factory_line = self.ctx.position(factory).start.line
        message = (
            f"`{self.ctx.code_for(operand).strip()}` is float32 from `{name}(...)` without dtype= "
            f"(line {factory_line}) and is combined at line {self.ctx.position(operand).start.line} with "
            f"`{other_text}`, which is {explain(value, dtype)}: "
            f"the result is promoted to float32; pass `dtype={other_text if is_simple_reference(other) else '<tensor>'}.dtype`"
        )
        fix = self._fix(factory, other, other_text)
        if fix is not None:
            # the fix edits the factory, so the finding sits there (where `# noqa` goes too)
            self._reported.add(id(factory))
            self.report(factory, message, confidence=confidence, fix=fix)
        else:
            self.report(operand, message, confidence=confidence)

    def _fix(self, factory: cst.Call, other, other_text: str) -> Fix | None:
        """Add ``dtype=<other>.dtype`` to the factory when ``other`` is surely in scope there:
        a plain reference whose root name the factory call itself already mentions, or the
        factory written right in the combining expression."""
        from dtype_lint.facts.names import dotted_name

        dotted = dotted_name(other)
        if dotted is None:
            return None
        if self.ctx.enclosing(factory, cst.FunctionDef) is not self.ctx.enclosing(other, cst.FunctionDef):
            return None
        root = dotted.split(".")[0]
        mentioned = any(n.value == root for n in _names_in(factory))
        inline = self.ctx.enclosing_statement(factory) is self.ctx.enclosing_statement(other)
        if not (mentioned or inline):
            return None
        last = factory.args[-1]
        end = self.ctx.position(last.value if isinstance(last.comma, cst.Comma) else last).end
        insert = f", dtype={other_text}.dtype"
        return Fix(Safety.UNSAFE, (Edit(end.line, end.column + 1, end.line, end.column + 1, insert),), "pass dtype=")


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    return [child for child in walk(node, into_definitions=True) if isinstance(child, cst.Name)]


def _zero_dim(call: cst.Call, name: str) -> bool:
    first = call.args[0].value if call.args else None
    if name == "tensor":
        return not isinstance(first, (cst.List, cst.Tuple, cst.ListComp))
    if isinstance(first, (cst.Tuple, cst.List)) and not first.elements:
        return True
    return False


def _is_float_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Float):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _is_float_literal(expr.expression)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "float":
        return True
    if isinstance(expr, cst.Attribute) and expr.attr.value in ("min", "max", "eps", "tiny"):
        return True
    return False

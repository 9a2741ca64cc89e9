"""The dtype flow of one file: which dtype each module, tensor and array has where it is used.

``ctx.flow`` (computed once per file, on first use) is a :class:`Flow`. Rules ask it questions
about nodes they visit; they never re-walk the tree to rediscover dtypes.

Query API (stable; other rules build on it)::

    value = ctx.flow.value_of(expr)        # Value | None, for any expression node
    value.kind       # "module" "tensor" "numpy" "dtype" "scaler" "optimizer" "autocast" "batch"
                     # "params" "tokenizer" "tuple" "mapping" "class" "instance" "unknown"
    value.dtypes     # frozenset over {"fp32","fp16","bf16","fp64","int","bool"}; empty = unknown
    value.certain    # one dtype on every path (then value.dtype is it, else None)
    value.partial    # some path left it unknown (dtypes is then a lower bound)
    value.may_be("fp16"), value.only("fp32"), value.low_precision
    value.describe() # "float16" / "float16 or float32"
    value.origin     # Origin(line, text) of the first dtype; value.origin_of("fp16")
    value.since("fp16")   # "since line 12 (`model.half()`)"
    value.role       # "param" (from model.parameters()), "grad" (p.grad), "peft" (adapters)
    value.target     # optimizer / params: dotted name of the module ("model", "self.net")
    value.info       # module: class name; optimizer: OptimizerInfo; scaler: ScalerInfo(node,
                     # enabled); autocast: AutocastInfo
    value.autocast   # tensor produced inside an enabled autocast region: its dtype ("fp16")

    ctx.flow.autocast_at(node)        # AutocastInfo of the innermost *enabled* autocast region
                                      # around node (with / accelerator.autocast() / decorator /
                                      # a local function called inside a region), else None
    ctx.flow.autocast_stack_at(node)  # every region around node, outermost first, including
                                      # enabled=False ones (for boundary rules)
    ctx.flow.casts_of("model")        # [Cast]: casts of that module (in place or assigned), in
                                      # the order the interpreter ran them; one per call node
    ctx.flow.module_casts             # [Cast]: every module cast
    ctx.flow.optimizers               # [OptimizerInfo]: optimizer constructions
    ctx.flow.scalers                  # [Value]: GradScaler constructions (info: ScalerInfo)
    ctx.flow.summary(function_def)    # FunctionSummary (returns, in-place casts) or None

A value is recorded for an expression node at the point it is evaluated; when the node is
evaluated more than once (loops, a helper called with different arguments) the recorded value is
the join of all of them. Calls run local functions with the caller's arguments and autocast; a
call of an instance of a module class of this file (``router(x)``) runs its ``forward`` with
``self`` as the caller holds it, so its submodules take the instance's dtype (``.half()``).
The analysis never imports torch and is deterministic: unions keep their dtypes in a fixed
order and origins in program order.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from dtype_lint.facts.amp import AutocastInfo
from dtype_lint.facts.flow.lowp_evidence import EvidenceOrigin, FollowsOrigin, without_evidence
from dtype_lint.facts.flow.values import (  # noqa: F401 - re-exported for rules
    BF16,
    BOOL,
    DTYPES,
    FLOATS,
    FP16,
    FP32,
    FP64,
    INT,
    LONG_NAMES,
    LOW,
    Origin,
    Value,
)

if TYPE_CHECKING:
    from dtype_lint.context import FileContext


@dataclasses.dataclass(frozen=True, eq=False)
class Cast:
    """A cast of a module: ``model.half()``, ``model.to(torch.bfloat16)``, ``model = model.float()``."""

    target: str  # dotted name of the module ("model", "self.unet", "model.encoder")
    dtypes: frozenset  # the dtype(s) it casts to
    before: Value | None  # the module's value just before the cast
    node: cst.Call  # the cast call
    in_place: bool  # True: a bare statement (the module is mutated); False: the result is assigned
    function: cst.FunctionDef | None  # the function the cast is written in (None: module level)
    order: int = 0  # when the interpreter first ran it (compare with OptimizerInfo.order)


@dataclasses.dataclass(frozen=True, eq=False)
class ScalerInfo:
    node: cst.Call
    enabled: bool | None  # the literal enabled=, True when omitted, None when run-time


@dataclasses.dataclass(frozen=True, eq=False)
class OptimizerInfo:
    node: cst.Call
    qualified: str  # "torch.optim.AdamW", or the spelled name when not imported
    target: str | None  # dotted name of the module whose parameters it optimises
    params: Value | None  # the module's value (dtype) when the optimizer was built
    eps: cst.BaseExpression | None  # the eps= argument, None when defaulted
    function: cst.FunctionDef | None
    order: int = 0  # when the interpreter first ran it (compare with Cast.order)


@dataclasses.dataclass
class FunctionSummary:
    node: cst.FunctionDef
    returns: Value | None = None
    calls: int = 0  # how many times it was interpreted with known arguments


class Flow:
    """The facts; built by ``dtype_lint.facts.flow.interpreter``. Read-only for rules."""

    def __init__(self) -> None:
        self._values: dict[int, Value] = {}
        self._regions: dict[int, tuple[tuple[AutocastInfo, ...], ...]] = {}
        self._parent = None  # node -> parent node (the FileContext's)
        self.module_casts: list[Cast] = []
        self.optimizers: list[OptimizerInfo] = []
        self.scalers: list[Value] = []
        self._summaries: dict[int, FunctionSummary] = {}
        self._rerun = None  # the interpreter's ``rerun`` (see ``returns_when_called``)

    # -- queries --------------------------------------------------------------------------------
    def value_of(self, expr: cst.CSTNode | None, *, evidence: bool = False, follows: bool = False) -> Value | None:
        """The value of ``expr``. The float16/bfloat16 that only a function's own dtype tests show
        (facts/flow/lowp_evidence.py) is left out unless ``evidence``, and the float16/bfloat16 a
        function takes because it follows a tensor's dtype unless ``follows`` (which implies
        ``evidence``): a rule that takes it says so."""
        if expr is None:
            return None
        value = self._values.get(id(expr))
        if follows:
            return value
        return without_evidence(value, EvidenceOrigin if not evidence else FollowsOrigin)

    def autocast_stack_at(self, node: cst.CSTNode) -> tuple[AutocastInfo, ...]:
        """The autocast regions around ``node`` (outermost first) on the path that has the most.

        When a statement runs under several contexts (a helper called inside and outside
        autocast), the one with an enabled region wins: rules about "outside autocast" stay
        silent unless it is outside on every path.
        """
        current = node
        while current is not None:
            stacks = self._regions.get(id(current))
            if stacks is not None:
                return _widest(stacks)
            current = self._parent(current) if self._parent is not None else None
        return ()

    def autocast_at(self, node: cst.CSTNode) -> AutocastInfo | None:
        """The innermost autocast region around ``node`` if it is enabled (or maybe enabled)."""
        stack = self.autocast_stack_at(node)
        if stack and stack[-1].enabled is not False:
            return stack[-1]
        return None

    def casts_of(self, target: str) -> list[Cast]:
        return [cast for cast in self.module_casts if cast.target == target]

    def summary(self, function: cst.FunctionDef) -> FunctionSummary | None:
        return self._summaries.get(id(function))

    def returns_when_called(self, function: cst.FunctionDef, given: dict[str, Value]) -> Value | None:
        """What ``function`` returns when called with ``given`` (parameter -> value), the other
        parameters unknown or defaulted: the function is run again, on the side (the facts
        stay as they are). The project summary asks it of every function worth it; a rule may."""
        return self._rerun(function, given) if self._rerun is not None else None


def _widest(stacks: tuple[tuple[AutocastInfo, ...], ...]) -> tuple[AutocastInfo, ...]:
    def score(stack):
        enabled = bool(stack) and stack[-1].enabled is not False
        return (enabled, len(stack))

    best = stacks[0]
    for stack in stacks[1:]:
        if score(stack) > score(best):
            best = stack
    return best


def analyze(ctx: "FileContext") -> Flow:
    from dtype_lint.facts.flow.interpreter import Interpreter

    return Interpreter(ctx).run()

"""A library class's method hands the low-precision input its contract gives it to a float32 layer
the class built itself.

A class derived from bitsandbytes' ``Linear8bitLt`` runs inside a model loaded with
``load_in_8bit=True``, which transformers loads in float16: its ``forward(x)`` is given float16
activations (facts/lowp_contract.py). The layers it adds in ``__init__`` with no ``dtype=``
(``self.lora_A = nn.Linear(in_features, r, bias=False)``) are float32, and outside autocast
``self.lora_A(x)`` fails ("expected scalar type Float but found Half"; huggingface/peft a353716
casts ``x.float()`` when ``not torch.is_autocast_enabled()`` and the output back).

Decided here: the argument, through dtype-keeping dropout calls (``self.lora_dropout(x)``: a
dropout or an identity keeps its input's dtype), is a contract parameter that the method has not
reassigned, whose low dtype comes from the contract alone (the flow's conditional "follows" view,
facts/followed.py); the layer is a torch.nn layer with parameters the flow knows is float32 on
every path; no autocast region is around the call, and the call is not in a branch that runs only
where ``torch.is_autocast_enabled()`` holds.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from dtype_lint.facts import lowp_contract
from dtype_lint.facts.branch_conditions import branches
from dtype_lint.facts.dtypes import FP32
from dtype_lint.facts.flow.library import parameterless
from dtype_lint.facts.followed import condition, followed_low
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.own_dtype_components import class_contract
from dtype_lint.facts.training import positional, walk

_DROPOUT = re.compile(r"drop", re.IGNORECASE)  # dropout, drop path: keep the dtype
_AUTOCAST_TEST = re.compile(r"^torch\.(is_autocast_enabled|cuda\.amp\.autocast_mode\.is_autocast_enabled)\(")


@dataclasses.dataclass(frozen=True)
class ContractInputToFp32Layer:
    call: cst.Call  # ``self.lora_A(self.lora_dropout(x))``
    layer: cst.BaseExpression  # ``self.lora_A``
    argument: cst.BaseExpression  # ``self.lora_dropout(x)``
    parameter: str  # ``x``
    condition: str  # ``when `x` is float16/bfloat16 (...)`` (facts/followed.py)


def inputs_in(ctx, function: cst.FunctionDef) -> list[ContractInputToFp32Layer]:
    cls = ctx.enclosing(function, cst.ClassDef)
    if cls is None:
        return []
    parameters = lowp_contract.contract_parameters(function, class_contract(ctx, cls))
    if not parameters:
        return []
    found = []
    for node in walk(function.body):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and dotted_name(node.func.value) == "self"):
            continue
        argument = positional(node, 0)
        inner = _through_dropout(argument)
        if not (isinstance(inner, cst.Name) and inner.value in parameters) or _rebound(ctx, function, inner.value, node):
            continue
        layer = ctx.flow.value_of(node.func)
        if layer is None or layer.kind != "module" or layer.dtypes != frozenset({FP32}) or layer.partial \
                or not isinstance(layer.info, str) or not layer.info.startswith("torch.nn.") or parameterless(layer.info):
            continue
        followed = followed_low(ctx, inner)
        if followed is None or ctx.flow.autocast_at(node) is not None or _under_autocast_test(ctx, node):
            continue
        found.append(ContractInputToFp32Layer(node, node.func, argument, inner.value, condition(followed[1])))
    return found


def _through_dropout(node: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """``x`` for ``self.lora_dropout(x)`` (a dropout, or the identity that stands for it)."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _DROPOUT.search(node.func.attr.value) \
            and len(node.args) == 1 and node.args[0].keyword is None:
        node = node.args[0].value
    return node


def _rebound(ctx, function: cst.FunctionDef, name: str, call: cst.Call) -> bool:
    order = ctx.source_order
    return any(isinstance(node, cst.Name) and node.value == name and isinstance(ctx.parent(node), cst.AssignTarget)
               and order(node)[0] < order(call)[0] for node in walk(function.body))


def _under_autocast_test(ctx, node: cst.CSTNode) -> bool:
    """In the branch of ``if torch.is_autocast_enabled():`` (or the else of ``if not ...``)."""
    return any(branch.holds and _AUTOCAST_TEST.match(branch.test) for branch in branches(ctx, node))

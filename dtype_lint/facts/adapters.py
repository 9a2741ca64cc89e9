"""PEFT adapter contracts of diffusers, transformers and peft, as facts the rules query.

* Attaching adapters in place (`model.add_adapter(config)` of diffusers' and transformers'
  `PeftAdapterMixin`, `peft.inject_adapter_in_model(config, model)`) creates the adapter weights
  in the dtype of the layers they wrap: peft's `LoraLayer.update_layer` ends with
  `_move_adapter_to_device_of_base_layer`, which casts them to the base weight's float dtype. On a
  float16 model the trainable parameters are float16. (`get_peft_model` is not such a call: its
  `PeftModel` upcasts float16/bfloat16 adapters to float32, `autocast_adapter_dtype=True`.)
* Upcasting the trainable parameters afterwards: diffusers' `training_utils.cast_training_params(
  model, dtype=torch.float32)`, peft's `helpers.cast_mixed_precision_params(model, dtype)`, or the
  loop the diffusers scripts wrote before those helpers existed (`for p in model.parameters(): if
  p.requires_grad: p.data = p.to(torch.float32)`).
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from dtype_lint.facts.flow.library import ATTACH_ADAPTER_FUNCTIONS
from dtype_lint.facts.flow.values import Value
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, keyword, positional, training_facts, walk

# Methods of a model that attach adapters in place, in the base layers' dtype.
ATTACH_METHODS = frozenset({"add_adapter"})
# Functions that do the same: qualified name -> (positional index, keyword) of the model.
ATTACH_FUNCTIONS = ATTACH_ADAPTER_FUNCTIONS
# Functions that cast a model's trainable parameters to float32 (by default or by argument). The bare
# names count too: older scripts define their own helper of that name.
TRAINABLE_UPCASTS = frozenset({
    "diffusers.training_utils.cast_training_params",
    "peft.helpers.cast_mixed_precision_params",
})
TRAINABLE_UPCAST_NAMES = frozenset(name.rsplit(".", 1)[1] for name in TRAINABLE_UPCASTS)


@dataclasses.dataclass(frozen=True)
class Attachment:
    """Adapters attached in place to ``model`` (its flow value at the call) by ``call``."""

    call: cst.Call
    model: cst.BaseExpression
    value: Value


def attachments(ctx) -> list[Attachment]:
    """Every in-place adapter attachment whose model the dtype flow knows is a module."""
    found = []
    for call in training_facts(ctx).calls:
        model = _attached_model(ctx, call)
        if model is None:
            continue
        value = ctx.flow.value_of(model)
        if value is not None and value.kind == "module":
            found.append(Attachment(call, model, value))
    return found


def _attached_model(ctx, call: cst.Call) -> cst.BaseExpression | None:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in ATTACH_METHODS and call.args:
        return func.value
    qualified = ctx.names.matches(func, *ATTACH_FUNCTIONS)
    if qualified is not None:
        index, name = ATTACH_FUNCTIONS[qualified]
        return keyword(call, name) or positional(call, index)
    return None


def upcasts_trainable_params(ctx) -> bool:
    """The file casts some model's trainable parameters to float32 (a helper of the libraries, or a
    hand-written loop that reassigns ``param.data`` over ``model.parameters()``). Which model it
    upcasts is not followed: any such upcast keeps the adapter contract silent."""
    for call in training_facts(ctx).calls:
        if ctx.names.matches(call.func, *TRAINABLE_UPCASTS) or call_name(call) in TRAINABLE_UPCAST_NAMES:
            return True
    return any(_reassigns_param_data(loop) for loop in walk(ctx.module, into_definitions=True) if isinstance(loop, cst.For))


def _reassigns_param_data(loop: cst.For) -> bool:
    """``for p in <parameters>: ... p.data = ...`` (over ``model.parameters()`` or a list of them):
    the loop recasts each parameter in place."""
    variable = dotted_name(loop.target)
    if variable is None:
        return False
    for node in walk(loop.body, into_definitions=True):
        if isinstance(node, cst.Assign) and any(dotted_name(t.target) == f"{variable}.data" for t in node.targets):
            return True
    return False


def trains_parameters_of(ctx, attachment: Attachment, optimizer) -> bool:
    """``optimizer`` (a flow OptimizerInfo built after ``attachment``, in its function) is given the
    attached model's parameters: its target is the model, or ``model.parameters()`` is called
    between the attachment and the optimizer."""
    name = dotted_name(attachment.model)
    if name is None or optimizer.function is not ctx.enclosing(attachment.call, cst.FunctionDef):
        return False
    start, end = ctx.source_order(attachment.call)[0], ctx.source_order(optimizer.node)[0]
    if not start < end:
        return False
    if optimizer.target == name:
        return True
    for call in training_facts(ctx).calls:
        func = call.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "parameters" and dotted_name(func.value) == name
                and start < ctx.source_order(call)[0] < end
                and ctx.enclosing(call, cst.FunctionDef) is optimizer.function):
            return True
    return False

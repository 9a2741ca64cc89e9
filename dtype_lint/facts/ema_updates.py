"""A moving average written by hand: a loop over a module's state that updates each tensor in
place with a decay.

An exponential moving average (EMA) of a model is often a class of the project's own
(ultralytics' ``ModelEMA``, after timm's ``ModelEma``)::

    for k, v in self.ema.state_dict().items():
        if v.dtype.is_floating_point:
            v *= d
            v += (1. - d) * msd[k].detach()

or ``ema_p.mul_(d).add_(p, alpha=1 - d)`` / ``ema_p.lerp_(p, 1 - d)`` over
``zip(ema.parameters(), model.parameters())``. The tensors a module's ``state_dict()``,
``parameters()`` and ``buffers()`` yield *are* its storage: the update is computed and rounded
in the module's own dtype (PyTorch's in-place ops keep the destination's dtype). The facts here
are syntactic: which loop, which module its tensors come from, which in-place statements form
the update; the dtype of the module is the flow's (dtype_lint/facts/flow).
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from dtype_lint.facts.training import call_name, walk

# Methods of a module whose results iterate (or whose ``.items()``/``.values()`` iterate) over
# the module's own tensors, not copies.
STATE_METHODS = frozenset({"state_dict", "parameters", "named_parameters", "buffers", "named_buffers"})
_PAIRS = frozenset({"named_parameters", "named_buffers"})  # yield (name, tensor)
MULTIPLY = frozenset({"mul_"})
ADD = frozenset({"add_", "addcmul_"})
LERP = frozenset({"lerp_"})


@dataclasses.dataclass(frozen=True)
class EmaUpdate:
    loop: cst.For
    module: cst.BaseExpression  # ``self.ema`` in ``self.ema.state_dict().items()``
    tensor: str  # the loop variable updated in place: ``v``
    update: cst.CSTNode  # the first statement or call of the update (``v *= d``, ``v.lerp_(...)``)


def ema_updates(ctx) -> list[EmaUpdate]:
    """Every loop of the file that updates a module's own tensors in place as a moving average:
    a multiplication in place (``v *= d``, ``v.mul_(d)``) followed by an addition in place
    (``v += ...``, ``.add_(...)``), or a ``lerp_``."""
    found = []
    for loop in ctx.all_nodes:  # (what ``walk(ctx.module, into_definitions=True)`` yields, walked once)
        if type(loop) is not cst.For:
            continue
        for name, module in _tensors_of(loop):
            update = _moving_average(loop.body, name)
            if update is not None:
                found.append(EmaUpdate(loop, module, name, update))
    return found


def _state_source(node: cst.BaseExpression) -> tuple[cst.BaseExpression, bool] | None:
    """``(module, pairs)`` for ``module.parameters()``, ``module.state_dict().values()`` (pairs
    False) or ``module.state_dict().items()``, ``module.named_parameters()`` (pairs True)."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return None
    method = node.func.attr.value
    if method in ("items", "values") and isinstance(node.func.value, cst.Call):
        inner = node.func.value
        if isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "state_dict" and not inner.args:
            return inner.func.value, method == "items"
        return None
    if method in STATE_METHODS and method != "state_dict":
        return node.func.value, method in _PAIRS
    return None


def _target_name(target: cst.BaseExpression, pairs: bool) -> str | None:
    if pairs:
        if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
            target = target.elements[1].value
        else:
            return None
    return target.value if isinstance(target, cst.Name) else None


def _tensors_of(loop: cst.For) -> list[tuple[str, cst.BaseExpression]]:
    """(loop variable, module) for each module whose own tensors the loop variable runs over:
    ``for k, v in m.state_dict().items()``, ``for p in m.parameters()``, ``for e, p in
    zip(ema.parameters(), model.parameters())``."""
    source = _state_source(loop.iter)
    if source is not None:
        module, pairs = source
        name = _target_name(loop.target, pairs)
        return [(name, module)] if name else []
    it = loop.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "zip" \
            and isinstance(loop.target, (cst.Tuple, cst.List)) and len(loop.target.elements) == len(it.args):
        found = []
        for arg, element in zip(it.args, loop.target.elements):
            source = _state_source(arg.value) if arg.keyword is None and not arg.star else None
            if source is None:
                continue
            name = _target_name(element.value, source[1])
            if name:
                found.append((name, source[0]))
        return found
    return []


def _is_tensor(node: cst.BaseExpression, name: str) -> bool:
    """``v`` or ``v.data``."""
    if isinstance(node, cst.Attribute) and node.attr.value == "data":
        node = node.value
    return isinstance(node, cst.Name) and node.value == name


def _chain(call: cst.Call) -> tuple[cst.BaseExpression, list[str]]:
    """``v.mul_(d).add_(x)`` -> (``v``, ["mul_", "add_"])."""
    methods = []
    node: cst.BaseExpression = call
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        methods.append(node.func.attr.value)
        node = node.func.value
    return node, methods[::-1]


def _gradient_step(node: cst.CSTNode) -> bool:
    """The added term reads a gradient (``p.add_(p.grad, alpha=-lr)``): an optimizer's step with
    weight decay, not an average of two models."""
    return any(isinstance(n, cst.Attribute) and n.attr.value == "grad" for n in walk(node))


def _added(call: cst.Call) -> list[cst.CSTNode]:
    """The ``add_`` calls of ``v.mul_(d).add_(x)``, outermost first."""
    found = []
    node: cst.BaseExpression = call
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value in ADD:
            found.append(node)
        node = node.func.value
    return found


def _moving_average(body: cst.CSTNode, name: str) -> cst.CSTNode | None:
    multiplied: cst.CSTNode | None = None
    for node in walk(body):
        if isinstance(node, cst.AugAssign) and _is_tensor(node.target, name):
            if isinstance(node.operator, cst.MultiplyAssign):
                multiplied = multiplied or node
            elif isinstance(node.operator, cst.AddAssign) and multiplied is not None and not _gradient_step(node.value):
                return multiplied
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and call_name(node) in MULTIPLY | ADD | LERP:
            receiver, methods = _chain(node)
            if not _is_tensor(receiver, name):
                continue
            if methods[0] in LERP:
                return node
            if any(_gradient_step(arg) for added in _added(node) for arg in added.args):
                continue
            if methods[0] in MULTIPLY:
                if any(method in ADD for method in methods[1:]):
                    return node
                multiplied = multiplied or node
            elif methods[0] in ADD and multiplied is not None:
                return multiplied
    return None

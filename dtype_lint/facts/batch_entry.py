"""Where a tensor taken out of a DataLoader batch is bound in the training step.

A batch carries what the dataset and ``collate_fn`` made: float32 unless they cast (NumPy
``astype(np.float32)`` masks, ``torch.stack`` of float32 images, precomputed embeddings saved and
read back as float32). The accelerate training scripts cast frozen models to ``weight_dtype``
and run them outside autocast, so each tensor the step takes from the batch needs
``.to(dtype=weight_dtype)`` where it is taken: ``prompt_embeds = batch["prompt_embeds"]``
(huggingface/diffusers 8ead643, eda36c4, 0ddc5bf, 93df5bb all fix the line that takes the value
out of the batch, not the model call). ``batch_binding`` follows a float32 input of a call back
through the step's own assignments (``mask = mask.reshape(...)``, ``x = torch.cat([latents,
mask])``, comprehensions over it) to the assignment that reads the batch, so a finding can be
reported where the cast belongs. It answers only when that chain is unambiguous: each name
has a single binding that reaches the use, in the same function.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.dtypes import FP32
from dtype_lint.facts.flow import loaders
from dtype_lint.facts.numerics import facts
from dtype_lint.facts.training import walk

MAX_STEPS = 8
# Wrappers a loop iterates a loader through (``enumerate(loader)``, ``tqdm(loader)``).
_LOOP_WRAPPERS = ("enumerate", "tqdm", "iter")


def _fp32_tensor(ctx, expr: cst.CSTNode) -> bool:
    value = ctx.flow.value_of(expr)
    return value is not None and value.kind == "tensor" and value.dtypes == frozenset({FP32})


def _loader_loop_targets(ctx, node: cst.CSTNode) -> frozenset[str]:
    """The names the ``for`` loops around ``node`` (in its function) bind to a batch of a loader
    the dtype flow knows (``for step, batch in enumerate(train_dataloader)``)."""
    names = set()
    function = ctx.enclosing(node, cst.FunctionDef)
    loop = ctx.enclosing(node, cst.For)
    while loop is not None and ctx.enclosing(loop, cst.FunctionDef) is function:
        iterable = loop.iter
        while isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) \
                and iterable.func.value in _LOOP_WRAPPERS and iterable.args:
            iterable = iterable.args[0].value
        value = ctx.flow.value_of(iterable)
        if value is not None and value.info == loaders.LOADER:
            names.update(n.value for n in walk(loop.target) if isinstance(n, cst.Name))
        loop = ctx.enclosing(loop, cst.For)
    return frozenset(names)


def _reads_batch(value: cst.BaseExpression, batch_names: frozenset[str]) -> bool:
    """``batch["masks"]``, ``batch.pixel_values``, ``batch[0].to(device)``."""
    for node in walk(value):
        if isinstance(node, (cst.Subscript, cst.Attribute)):
            root = node.value
            if isinstance(root, cst.Name) and root.value in batch_names:
                return True
    return False


def _fp32_names(ctx, expr: cst.BaseExpression) -> list[cst.Name]:
    """The names in ``expr`` that hold a float32 tensor there (callees and attribute names not
    counted), in source order."""
    found = []
    # a comprehension's own variable (``m`` in ``[f(m) for m in masks]``) is bound by it, not by
    # an assignment: its float32 comes through the iterated name, which is followed instead
    bound_here = {n.value for comp in walk(expr) if isinstance(comp, cst.CompFor)
                  for n in walk(comp.target) if isinstance(n, cst.Name)}
    for node in walk(expr):
        if isinstance(node, cst.Name) and node.value in bound_here:
            continue
        if isinstance(node, cst.Name):
            parent = ctx.parent(node)
            if isinstance(parent, cst.Call) and parent.func is node:
                continue
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if _fp32_tensor(ctx, node) or _comprehension_over_fp32(ctx, node):
                found.append(node)
    return found


def _comprehension_over_fp32(ctx, name: cst.Name) -> bool:
    """``masks`` in ``[interpolate(m) for m in masks]``: iterated, the flow may keep no value
    for it, but its elements are what ``m`` holds."""
    parent = ctx.parent(name)
    return isinstance(parent, cst.CompFor) and parent.iter is name and ctx.flow.value_of(name) is not None \
        and ctx.flow.value_of(name).kind == "tensor" and FP32 in ctx.flow.value_of(name).dtypes


def batch_binding(ctx, expr: cst.BaseExpression) -> tuple[cst.CSTNode, cst.Name] | None:
    """(the statement, the name it binds) where the float32 part of ``expr`` is taken from a
    loader's batch in the function around ``expr``, or None when no unambiguous chain of
    assignments leads there."""
    batch_names = _loader_loop_targets(ctx, expr)
    if not batch_names:
        return None
    function = ctx.enclosing(expr, cst.FunctionDef)
    numeric = facts(ctx)
    pending = [expr]
    seen: set[int] = set()
    for _ in range(MAX_STEPS):
        if not pending:
            return None
        current = pending.pop(0)
        names = [current] if isinstance(current, cst.Name) else _fp32_names(ctx, current)
        for name in names:
            if id(name) in seen or name.value in batch_names:
                continue
            seen.add(id(name))
            reaching = numeric.reaching(name)
            if len(reaching) != 1 or reaching[0][1] is not function or function is None:
                continue
            value = reaching[0][0]
            statement = ctx.parent(value)
            if not isinstance(statement, cst.Assign) or len(statement.targets) != 1 \
                    or not isinstance(statement.targets[0].target, cst.Name):
                continue
            if _reads_batch(value, batch_names) and _fp32_tensor(ctx, value):
                return statement, statement.targets[0].target
            pending.append(value)
    return None

"""Gradients still multiplied by a GradScaler's loss scale: which parameters hold them, and what
uses them before they are unscaled (child side, DTL305).

The state is per parameter, not per scaler or per optimizer: a scaled backward (of the tensor
``scaler.scale(loss)`` returned) marks each leaf whose gradient it wrote; ``unscale_(optimizer)``
(also run inside ``scaler.step``) clears the marks of that optimizer's parameters. A mark still
set when the gradient is used is the defect:

- an optimizer stepped outside the scaler on parameters whose gradient is still the one the
  scaled backward wrote (``scaler.step(opt_a)`` then ``opt_b.step()``);
- gradient clipping on such parameters (DTL303, in hooks.py);
- a hand-written update (``p -= lr * p.grad``, no torch.optim): seen at the next scaled loss or at
  exit as sampled parameters that moved against their scaled gradient.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

import torch

# Bounded cost of the hand-update check: values of this many leaves, this many elements each.
SAMPLE_TENSORS = 16
SAMPLE_ELEMENTS = 64
# Of the sampled elements that moved and had a gradient, the share that moved against it: an
# update made from the gradient (weight decay, renormalisation or a reload do not line up).
ALIGNED_SHARE = 0.9


@dataclasses.dataclass
class Mark:
    param_ref: Any  # weakref to the leaf: an input made requires_grad dies with its iteration
    grad: Any  # weakref to the gradient tensor the scaled backward left
    version: int
    scale: float
    origins: list  # the scale() line, the GradScaler's construction
    values: torch.Tensor | None = None  # sampled parameter values right after the backward
    grad_values: torch.Tensor | None = None

    @property
    def param(self) -> torch.Tensor | None:
        return self.param_ref()

    def is_live(self) -> bool:
        """The parameter still holds the gradient the scaled backward left, unchanged."""
        param = self.param
        grad = None if param is None else param.grad
        return grad is not None and grad is self.grad() and grad._version == self.version

    def refresh(self) -> None:
        """The gradient was changed in place by something that keeps it scaled (clipping)."""
        param = self.param
        grad = None if param is None else param.grad
        if grad is not None and grad is self.grad():
            self.version = grad._version


def graph_leaves(tensor: torch.Tensor) -> list[torch.Tensor]:
    """The leaf tensors a backward from ``tensor`` accumulates gradients into."""
    root = tensor.grad_fn
    if root is None:
        return [tensor] if tensor.requires_grad else []
    seen: set = set()
    pending = [root]
    leaves = []
    while pending:
        node = pending.pop()
        for child, _index in node.next_functions:
            if child is None or child in seen:
                continue
            seen.add(child)
            variable = getattr(child, "variable", None)  # AccumulateGrad: its leaf
            if variable is not None:
                leaves.append(variable)
            else:
                pending.append(child)
    return leaves


def _grad_state(param: torch.Tensor):
    grad = param.grad
    return None if grad is None else (id(grad), grad._version)


class ScaledGradients:
    def __init__(self) -> None:
        self.marks: dict[int, Mark] = {}

    def before_backward(self, tensor: torch.Tensor) -> tuple[list, list]:
        leaves = graph_leaves(tensor)
        return leaves, [_grad_state(leaf) for leaf in leaves]

    def after_backward(self, prepared: tuple[list, list], scale: float, origins: list) -> None:
        leaves, states = prepared
        # Earlier marks stay only while their gradient is still the scaled one (accumulation).
        marks = {key: mark for key, mark in self.marks.items() if mark.is_live()}
        sampled = 0
        for leaf, state in zip(leaves, states):
            grad = leaf.grad
            if grad is None or _grad_state(leaf) == state:
                continue  # this backward wrote no gradient into it
            mark = Mark(weakref.ref(leaf), weakref.ref(grad), grad._version, scale, origins)
            if sampled < SAMPLE_TENSORS and grad.layout == torch.strided and leaf.is_floating_point():
                mark.values = leaf.detach().reshape(-1)[:SAMPLE_ELEMENTS].clone()
                mark.grad_values = grad.detach().reshape(-1)[:SAMPLE_ELEMENTS].clone()
                sampled += 1
            marks[id(leaf)] = mark
        self.marks = marks

    def live(self, params) -> list[Mark]:
        if not self.marks:
            return []
        found = []
        for param in params:
            mark = self.marks.get(id(param))
            if mark is not None and mark.param is param and mark.is_live():
                found.append(mark)
        return found

    def clear(self, params) -> None:
        if self.marks:
            for param in params:
                mark = self.marks.get(id(param))
                if mark is not None and mark.param is param:
                    del self.marks[id(param)]

    def moved_against_gradient(self) -> list[Mark]:
        """Marked parameters updated from their still-scaled gradient since the backward (their
        marks are dropped: one update, one finding)."""
        moved = []
        for key, mark in list(self.marks.items()):
            param = mark.param
            if param is None:
                del self.marks[key]
                continue
            if mark.values is None or not bool(torch.isfinite(mark.values).all()):
                continue
            now = param.detach().reshape(-1)[: mark.values.numel()]
            if now.dtype != mark.values.dtype or now.shape != mark.values.shape:
                continue  # recast or resized: not an update
            delta = now.double() - mark.values.double()
            grad = mark.grad_values.double()
            # inf/NaN count as moved: a scaled update overflows the weights
            changed = (delta != 0) | ~torch.isfinite(now)
            considered = changed & (grad != 0)
            count = int(considered.sum())
            if not count:
                continue
            against = considered & ((torch.sign(delta) == -torch.sign(grad)) | ~torch.isfinite(now))
            if int(against.sum()) >= ALIGNED_SHARE * count:
                moved.append(mark)
                del self.marks[key]
        return moved

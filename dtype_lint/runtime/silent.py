"""Low-precision defects that never raise and never make inf/NaN, seen at optimizer steps.

- an ``eps`` below the smallest normal of the parameters' dtype (float16: 6.1e-5): it rounds
  away in the denominator, so Adam-family updates blow up for small second moments;
- updates rounded to zero: parameters with non-zero gradients that two steps left unchanged,
  because ``lr * update`` is below the dtype's spacing at the weights' magnitude;
- the trained parameters changing dtype under a live optimizer: between two steps, or between
  its construction and its first step (an ``evaluate(model)`` that casts at iteration 0).

The checks look only at float16/bfloat16 parameters, and the update check at a bounded sample
of them, so a float32 run pays one dtype scan per step.
"""

from __future__ import annotations

import torch

from dtype_lint.runtime.state import State

LOW_PRECISION = (torch.float16, torch.bfloat16)
# Bounded cost of the update check: at most this many tensors, this many elements each.
SAMPLE_TENSORS = 32
SAMPLE_ELEMENTS = 1 << 16
# Most sampled elements with a gradient unchanged by the step: the update rounded away.
ZERO_UPDATE_SHARE = 0.5
ROUNDED_STEPS = 2


def _short(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _params(optimizer):
    for group in optimizer.param_groups:
        for param in group["params"]:
            yield group, param


def on_init(optimizer) -> None:
    """The dtypes the optimizer was built for: a cast before its first step changes them too."""
    info = optimizer.__dict__.setdefault("_dtl_silent", {"dtypes": None, "snapshot": None})
    info["dtypes"] = tuple(param.dtype for _group, param in _params(optimizer))


def before_step(state: State, optimizer) -> None:
    info = optimizer.__dict__.setdefault("_dtl_silent", {"dtypes": None, "snapshot": None})
    dtypes = tuple(param.dtype for _group, param in _params(optimizer))
    if info["dtypes"] is not None and dtypes != info["dtypes"]:
        _claim_dtype_change(state, optimizer, info["dtypes"], dtypes, first=not info.get("stepped"))
    info["stepped"] = True
    info["dtypes"] = dtypes
    if not any(dtype in LOW_PRECISION for dtype in dtypes):
        info["snapshot"] = None
        return
    _check_eps(state, optimizer)
    sample = []
    for group, param in _params(optimizer):
        if len(sample) >= SAMPLE_TENSORS:
            break
        grad = param.grad
        if param.dtype in LOW_PRECISION and grad is not None and grad.layout == torch.strided and group.get("lr"):
            flat_param = param.detach().reshape(-1)[:SAMPLE_ELEMENTS]
            flat_grad = param.grad.detach().reshape(-1)[:SAMPLE_ELEMENTS]
            sample.append((param, flat_param.clone(), flat_grad != 0))
    info["snapshot"] = sample or None


def after_step(state: State, optimizer) -> None:
    info = optimizer.__dict__.get("_dtl_silent")
    if not info or not info["snapshot"]:
        return
    sample, info["snapshot"] = info["snapshot"], None
    moved = stuck = 0
    dtype = None
    for param, before, has_grad in sample:
        after = param.detach().reshape(-1)[: before.numel()]
        if after.dtype != before.dtype:
            continue
        unchanged = (after == before) & has_grad
        stuck += int(unchanged.sum())
        moved += int(has_grad.sum()) - int(unchanged.sum())
        dtype = dtype or param.dtype
    if not stuck or stuck < ZERO_UPDATE_SHARE * (stuck + moved):
        return
    # One lost step may be a warm-up's tiny learning rate; two mean the training cannot move.
    info["rounded_steps"] = info.get("rounded_steps", 0) + 1
    if info["rounded_steps"] >= ROUNDED_STEPS:
        recorder = state.recorder
        origin = optimizer.__dict__.get("_dtl_origin")
        lrs = sorted({group.get("lr") for group in optimizer.param_groups if isinstance(group.get("lr"), float)})
        recorder.claim(
            "updates-rounded-to-zero",
            ("DTL505", "DTL401"),
            f"{type(optimizer).__name__}.step() left {stuck} of {stuck + moved} sampled {_short(dtype)} weights with "
            f"non-zero gradients unchanged (lr={', '.join(f'{lr:g}' for lr in lrs) or '?'}): the updates are below "
            f"{_short(dtype)}'s spacing and round to zero",
            recorder.user_stack(),
            origins=([origin] if origin else []) + state.casts_of(param for param, _before, _grad in sample),
            detail={"unchanged": stuck, "sampled": stuck + moved, "dtype": _short(dtype), "lr": lrs},
            key=("updates-rounded-to-zero", id(optimizer)),
        )


def _check_eps(state: State, optimizer) -> None:
    for group in optimizer.param_groups:
        eps = group.get("eps")
        if not isinstance(eps, float) or eps <= 0:
            continue
        for param in group["params"]:
            if param.dtype not in LOW_PRECISION:
                continue
            tiny = torch.finfo(param.dtype).tiny
            if eps < tiny:
                recorder = state.recorder
                origin = optimizer.__dict__.get("_dtl_origin")
                recorder.claim(
                    "eps-below-dtype",
                    ("DTL404",),
                    f"{type(optimizer).__name__} eps={eps:g} on {_short(param.dtype)} parameters is below "
                    f"{_short(param.dtype)}'s smallest normal {tiny:.3g}: it vanishes from the update's "
                    "denominator, so steps blow up where gradients are small",
                    recorder.user_stack(),
                    origins=[origin] if origin else [],
                    detail={"eps": eps, "dtype": _short(param.dtype), "smallest_normal": tiny},
                    key=("eps-below-dtype", id(optimizer)),
                )
                return


def _claim_dtype_change(state: State, optimizer, before: tuple, after: tuple, first: bool) -> None:
    # Parameter groups added later (add_param_group) extend the tuple: only shared positions count.
    changed = sorted({f"{_short(a)} -> {_short(b)}" for a, b in zip(before, after) if a != b})
    if not changed:
        return
    recorder = state.recorder
    when = ("after it was built, before its first step" if first else "between steps")
    consequence = ("training goes on in the new dtype, not the one the optimizer was built for" if first
                   else "its state (momentum, variance) keeps the old dtype")
    recorder.claim(
        "param-dtype-changed",
        ("DTL403", "DTL405"),
        f"the parameters {type(optimizer).__name__} trains changed dtype {when} ({', '.join(changed)}): "
        f"{consequence}",
        recorder.user_stack(),
        origins=state.casts_of(param for _group, param in _params(optimizer)),
        detail={"changes": changed},
        key=("param-dtype-changed", id(optimizer), tuple(changed)),
    )

"""Whether a program runs on a device that lacks a dtype altogether, as its own code or its
library says, for the device gaps of torch's semantics data (``devices``: op_db claims no float64
kernel on MPS, so Metal has no float64 tensor at all).

Evidence, never a guess (no device is assumed for code that names none):

* the file names the ``mps`` device: a string ``"mps"`` (``torch.device("mps")``, ``.to("mps")``,
  ``device.type == "mps"``) or ``torch.backends.mps`` / ``torch.mps``;
* the file defines a class of a library that documents Apple MPS as a supported backend and runs
  its models on the device of their inputs: diffusers (its "Metal Performance Shaders" guide runs
  pipelines with ``pipe.to("mps")``), through a base spelled ``ModelMixin``, ``DiffusionPipeline``
  or ``SchedulerMixin`` imported from diffusers or, inside diffusers' own package, relatively.

A tensor is made on such a device when its ``device=`` follows another tensor's (``pos.device``,
unless that tensor was made on the CPU in the same function) or names a device the program may
choose (facts/devices.py: a parameter, a flag, not a fixed ``"cpu"``/``"cuda"``). Code under a test
of the device (``if x.device.type == "mps":``, ``torch.float32 if is_mps else torch.float64``) has
handled it.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from dtype_lint.facts import devices
from dtype_lint.facts.lowp_contract import relative_imports
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import keyword, string_value, training_facts, walk

# library -> the bases whose subclasses the library runs on MPS (its documented backend)
MPS_LIBRARIES = {"diffusers": frozenset({"ModelMixin", "DiffusionPipeline", "SchedulerMixin"})}
_DEVICE_TEST = re.compile(r"\b(mps|npu|is_mps|is_npu)\b|[\"']mps|[\"']npu")
_MPS_MODULES = ("torch.backends.mps", "torch.mps")


@dataclasses.dataclass(frozen=True)
class DeviceEvidence:
    """The program may run on ``device``, as ``node`` shows, for the reason ``why``."""

    device: str
    node: cst.CSTNode
    why: str


def mps_evidence(ctx) -> DeviceEvidence | None:
    """What in the file says it may run on MPS (cached per file), or None."""
    if not hasattr(ctx, "_mps_evidence"):
        ctx._mps_evidence = _find_mps(ctx)
    return ctx._mps_evidence


def _find_mps(ctx) -> DeviceEvidence | None:
    for node in walk(ctx.module, into_definitions=True):
        text = string_value(node) if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)) else None
        if text is not None and text.split(":")[0].strip().lower() == "mps":
            line = ctx.position(node).start.line
            return DeviceEvidence("mps", node, f"the program names the `mps` device (line {line})")
        if isinstance(node, cst.Attribute) and any(q.startswith(_MPS_MODULES) for q in ctx.names.qualified_names(node)):
            line = ctx.position(node).start.line
            return DeviceEvidence("mps", node, f"the program asks for the `mps` backend (line {line})")
    relative = relative_imports(ctx.module)
    for node in walk(ctx.module, into_definitions=True):
        if not isinstance(node, cst.ClassDef):
            continue
        for base in node.bases:
            spelled = dotted_name(base.value) or ""
            last = spelled.rsplit(".", 1)[-1]
            for library, bases in MPS_LIBRARIES.items():
                if last not in bases:
                    continue
                qualified = ctx.names.qualified_names(base.value)
                if any(q.split(".")[0] == library for q in qualified) or (spelled in relative and spelled == last):
                    return DeviceEvidence("mps", node, f"`{node.name.value}` is a {library} `{last}`, and {library} "
                                                       f"runs on Apple MPS (`.to(\"mps\")`) as a documented backend")
    return None


def under_device_test(ctx, node: cst.CSTNode) -> bool:
    """``node`` sits under a test (``if``, a conditional expression, ``while``) that names the MPS
    or NPU device, in its function: the code chose per device."""
    current, parent = node, ctx.parent(node)
    while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Module)):
        test = None
        if isinstance(parent, (cst.If, cst.While)) and current is not parent.test:
            test = parent.test
        elif isinstance(parent, cst.IfExp) and current is not parent.test:
            test = parent.test
        if test is not None and _DEVICE_TEST.search(ctx.code_for(test)):
            return True
        current, parent = parent, ctx.parent(parent)
    return False


def may_be_mps(ctx, device: cst.BaseExpression, scope: cst.CSTNode) -> bool:
    """The device expression ``device`` may name MPS on a program that runs there: a literal
    ``"mps"``, another tensor's ``.device`` (not one made on the CPU here), or a device the
    program chooses (not fixed to the CPU or CUDA)."""
    text = string_value(device)
    if text is not None:
        return text.split(":")[0].strip().lower() == "mps"
    if isinstance(device, cst.Attribute) and device.attr.value == "device":
        owner = dotted_name(device.value)
        return owner is None or not _made_on_cpu(ctx, owner, scope)
    choices = devices.device_choices(ctx, device, scope)
    return not choices or devices.OTHER in choices


def _made_on_cpu(ctx, name: str, scope: cst.CSTNode) -> bool:
    """``name`` is bound in ``scope`` only to tensors made or moved to the CPU: its value's
    factories all say ``device="cpu"`` (``1.0 / theta ** (torch.arange(..., device="cpu") / d)``)
    or it ends in ``.cpu()``, and nothing in it moves it elsewhere."""
    found = False
    for statement, value in training_facts(ctx).assignments.get(name, []):
        if not devices.in_scope(ctx, statement, scope):
            continue
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "cpu":
            found = True
            continue
        places = []
        for call in (n for n in walk(value) if isinstance(n, cst.Call)):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda"):
                return False
            place = keyword(call, "device")
            if place is not None:
                places.append(devices.device_choices(ctx, place, scope))
        if any(choices != {devices.CPU} for choices in places):
            return False
        # a rebinding with no device of its own (``freqs = torch.outer(t, freqs).float()``) stays
        # where its inputs are
        found = found or bool(places)
    return found


def handled(ctx, node: cst.CSTNode) -> bool:
    """``node`` runs where its failure is expected or its device fixed: in a ``try`` body with a
    handler (a probe of the device's float64 support), or under ``with torch.device("cpu"):``."""
    current, parent = node, ctx.parent(node)
    while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Module)):
        if isinstance(parent, cst.Try) and current is parent.body and parent.handlers:
            return True
        if isinstance(parent, cst.With) and current is parent.body:
            for item in parent.items:
                call = item.item
                if isinstance(call, cst.Call) and call.args and devices.call_name(call) == "device" \
                        and devices.device_choices(ctx, call.args[0].value, ctx.module) == {devices.CPU}:
                    return True
        current, parent = parent, ctx.parent(parent)
    return False

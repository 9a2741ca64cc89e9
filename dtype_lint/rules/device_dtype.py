"""DTL513 device-missing-dtype: a tensor made in a dtype its device has no kernel for at all
(float64 on Apple MPS), read from torch's generated semantics (``devices``)."""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.amp import dtype_literal
from dtype_lint.facts.device_support import handled, mps_evidence, may_be_mps, under_device_test
from dtype_lint.facts.devices import scope_of
from dtype_lint.facts.flow.op_results import data_for
from dtype_lint.facts.numerics import call_shape, explain
from dtype_lint.facts.training import keyword, string_value
from dtype_lint.findings import Confidence
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule

_CODES = {"float64": "fp64"}
_SPELLED = {"fp64": "float64"}


class DeviceMissingDtype(Rule):
    """## What it does
    Flags a tensor made, or moved, in a dtype that a device the program runs on has no kernel
    for at all: `torch.arange(0, dim, 2, dtype=torch.float64, device=pos.device)` in a model that
    runs on Apple MPS, or `torch.from_numpy(sigmas).to(device)` of NumPy's float64 sigmas (the
    dtype flow knows the tensor is float64 on every path). Which device lacks which dtype is read from torch's generated semantics for
    the configured `target-torch` (docs/torch-semantics.md, `devices`: no op of torch's op database
    claims a float64 kernel on MPS). That the program runs on MPS must show in the file: it names
    the `mps` device (`torch.device("mps")`, `device.type == "mps"`, `torch.backends.mps`), or it
    defines a diffusers model, pipeline or scheduler (diffusers documents MPS as a supported
    backend, and its models make their tensors on their inputs' device). The tensor's device must
    be one MPS can be: another tensor's `.device` (not one made on the CPU there), `"mps"`, or a
    device the program chooses; a factory without `device=` (the CPU) or under a test of the
    device (`torch.float32 if is_mps else torch.float64`) is not flagged.

    ## Why is this bad?
    Metal has no double precision: making a float64 tensor on MPS raises (`Cannot convert a MPS
    Tensor to float64 dtype as the MPS framework doesn't support float64. Please use float32
    instead.`), so the model fails on every Mac at its first rotary or timestep embedding
    (huggingface/diffusers 6a339ce, 01a5692; diffusers' own `get_1d_rotary_pos_embed` picks
    float32 on MPS).

    ## Example
    ```python
    class Embed(ModelMixin):
        def forward(self, pos):
            scale = torch.arange(0, 64, 2, dtype=torch.float64, device=pos.device) / 64
    ```

    ## Use instead
    ```python
    class Embed(ModelMixin):
        def forward(self, pos):
            dtype = torch.float32 if pos.device.type == "mps" else torch.float64
            scale = torch.arange(0, 64, 2, dtype=dtype, device=pos.device) / 64
    ```

    ## Fix safety
    No fix: whether float32 is precise enough there (positions, frequencies) is the author's
    call. Medium confidence: the program shows it runs on MPS, not that this call does.
    """

    code = "DTL513"
    name = "device-missing-dtype"
    summary = "Tensor made in a dtype its device has no kernel for (float64 on Apple MPS)"
    queries = (
        "which dtypes a device has no kernel for in any op, from torch's generated semantics (facts/semantics.py `device_lacks`)",
        "whether the program runs on that device, by its own code or its library's documented backends (facts/device_support.py)",
        "the devices a device expression may name (facts/devices.py)",
    )
    triggers = (exact_word("float64"), exact_word("double"), exact_word("numpy"), exact_word("np"))
    valid = (
        "import torch\nfrom diffusers import ModelMixin\nclass E(ModelMixin):\n    def forward(self, pos):\n"
        "        dtype = torch.float32 if pos.device.type == 'mps' else torch.float64\n"
        "        return torch.arange(0, 8, 2, dtype=dtype, device=pos.device)\n",
        # no device: made on the CPU
        "import torch\nfrom diffusers import ModelMixin\nclass E(ModelMixin):\n    def forward(self, pos):\n"
        "        return torch.arange(0, 8, 2, dtype=torch.float64).float().to(pos.device)\n",
        # nothing says the program runs on MPS
        "import torch\ndef embed(pos):\n    return torch.arange(0, 8, 2, dtype=torch.float64, device=pos.device)\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom diffusers import ModelMixin\nclass E(ModelMixin):\n    def forward(self, pos):\n"
            "        return torch.arange(0, 8, 2, dtype=torch.float64, device=pos.device)\n"
        ),
        Invalid(
            "import torch\ndevice = torch.device('mps' if torch.backends.mps.is_available() else 'cpu')\n"
            "weights = torch.ones(3, dtype=torch.double, device=device)\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        shape = call_shape(self.ctx, node)
        if shape is None:
            return
        data = data_for(self.ctx)
        if data is None:
            return
        if shape.qualified is not None:
            entry = data.entry(shape.qualified) if shape.qualified.startswith("torch.") else None
            if entry is None or entry.get("kw") != "dtype":
                return
            dtype_expr, device = keyword(node, "dtype"), keyword(node, "device")
        elif shape.name == "to" and shape.receiver is not None:
            dtype_expr, device = self._to_arguments(node)
        else:
            return
        code = _CODES.get(dtype_literal(self.ctx.names, dtype_expr) or "")
        moved = None
        if code is None and dtype_expr is None and shape.qualified is None and device is not None:
            # ``torch.from_numpy(np.linspace(...)).to(device)``: a tensor float64 on every path
            # (NumPy's default float) moved as it is
            moved = self.ctx.flow.value_of(shape.receiver)
            if moved is not None and moved.kind == "tensor" and moved.certain and moved.dtype in _SPELLED:
                code = moved.dtype
        if device is not None:
            held = self.ctx.flow.value_of(device)
            if held is not None and held.kind == "tensor":
                return  # ``x.to(other)``: takes other's dtype and device
        if code is None or device is None or not data.device_lacks(code, "mps"):
            return
        scope = scope_of(self.ctx, node)
        if not may_be_mps(self.ctx, device, scope) or under_device_test(self.ctx, node) or handled(self.ctx, node):
            return
        literal = string_value(device)
        if literal is not None:
            why = f"`{literal}` is named here"
        else:
            evidence = mps_evidence(self.ctx)
            if evidence is None:
                return
            why = evidence.why
        made = "" if moved is None else f" (`{self.ctx.code_for(shape.receiver).strip()}` is {explain(moved)})"
        self.report(
            node,
            f"{_SPELLED[code]} tensor{made} on `{self.ctx.code_for(device).strip()}`, which may be Apple MPS ({why}): "
            f"MPS has no {_SPELLED[code]} (torch's op database claims no kernel for it there) and making the "
            f"tensor raises; use float32 on MPS (`torch.float32 if x.device.type == \"mps\" else torch.{_SPELLED[code]}`)",
            confidence=Confidence.MEDIUM,
        )

    def _to_arguments(self, node: cst.Call) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
        """(dtype, device) of ``x.to(device, dtype)`` / ``x.to(device, dtype=...)`` / ``x.to(device=..., dtype=...)``."""
        dtype_expr, device = keyword(node, "dtype"), keyword(node, "device")
        for arg in (a for a in node.args if a.keyword is None and not a.star):
            if dtype_literal(self.ctx.names, arg.value) is not None:
                dtype_expr = dtype_expr or arg.value
            elif device is None and _spells_device(arg.value):
                device = arg.value  # not ``x.to(orig_dtype)`` nor ``x.to(other)``
        return dtype_expr, device


def _spells_device(expr: cst.BaseExpression) -> bool:
    """A positional ``.to()`` argument that names a device: a string, ``torch.device(...)``,
    ``x.device``, or a name that says so (``device``, ``self.device``, ``target_device``)."""
    if isinstance(expr, (cst.SimpleString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.Call):
        return isinstance(expr.func, (cst.Name, cst.Attribute)) and (
            expr.func.value if isinstance(expr.func, cst.Name) else expr.func.attr.value) == "device"
    last = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    return "device" in last.lower()

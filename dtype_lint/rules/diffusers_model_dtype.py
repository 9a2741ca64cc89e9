"""DTL114: a float32 the model's own code fixes, inside a diffusers model loaded in float16/bfloat16.

The mismatch rules (DTL101, DTL107) need the module's low dtype in the program; a diffusers
model's ``forward`` never sees one: the pipeline loads it with ``torch_dtype=...``. The library's
contract (facts/diffusers_models.py) says which of its submodules run in that dtype and which of
its buffers stay float32; the flow says which values are float32.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts import diffusers_models as dm
from dtype_lint.facts.dtypes import FP32, FP64
from dtype_lint.findings import Confidence
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.model_input import code

_CASTS_BACK = frozenset({"to", "type", "type_as", "half", "bfloat16"})
_PROMOTING = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)

_MODEL = (
    "import torch\nimport torch.nn.functional as F\nfrom torch import nn\nfrom diffusers import ModelMixin\n"
    "class Block(nn.Module):\n    def __init__(self, c):\n        super().__init__()\n        self.conv = nn.Conv2d(c, c, 3)\n"
    "    def forward(self, x):\n        return self.conv(x)\n"
)


class DiffusersModelFloat32(Rule):
    """## What it does
    Inside a diffusers model (a class derived from `ModelMixin`), flags a float32 that the
    model's own code fixes and that meets the weights or the hidden states of a model loaded in
    float16/bfloat16:
    - a tensor made float32 in the method (`x.float()` before an interpolation, a
      `.to(torch.float32)`) and handed, not cast back, to a submodule with weights: a
      `self.<attr>` built in `__init__` as `nn.Linear`/`nn.Conv*` or as a block of the file whose
      `forward` runs its input through such a layer first, or a loop variable the enclosing
      `if isinstance(block, Block):` names as such a block;
    - a buffer registered with `persistent=False` and made float32 in `__init__` (`.float()`, a
      factory without `dtype=`) added to or multiplied with the hidden states as it is
      (`hidden_states = hidden_states + self.temp_pos_embed`).
    Submodules listed in the class's `_keep_in_fp32_modules` and calls under autocast are skipped.

    ## Why is this bad?
    `from_pretrained(..., torch_dtype=torch.float16)` loads the checkpoint's tensors into the
    model in that dtype and does not cast the model itself (facts/diffusers_models.py): every
    layer with weights runs in float16/bfloat16, and a float32 input fails there with `Input
    type (float) and bias type (c10::Half) should be the same` / `mat1 and mat2 must have the
    same dtype` (huggingface/diffusers 139f707, Stable Cascade's `interpolate(x.float(), ...)`).
    A non-persistent buffer is not in the checkpoint and keeps the float32 `__init__` gave it:
    adding it promotes the hidden states to float32, and the next float16 layer fails
    (huggingface/diffusers 75d7e5c, Latte's `temp_pos_embed`).

    ## Example
    ```python
    x = F.interpolate(x.float(), skip.shape[-2:], mode="bilinear")
    x = block(x, skip)
    ```

    ## Use instead
    ```python
    orig_type = x.dtype
    x = F.interpolate(x.float(), skip.shape[-2:], mode="bilinear").to(orig_type)
    x = block(x, skip)
    ```

    ## Fix safety
    No automatic fix: whether to cast to the model's dtype or to the dtype the value had is the
    author's choice.
    """

    code = "DTL114"
    name = "diffusers-model-fp32-value"
    summary = "float32 value meets the float16/bfloat16 weights or hidden states of a diffusers model"
    queries = (
        "diffusers' model contract: the class derives from ModelMixin, which submodules have weights that run in the loaded torch_dtype, `_keep_in_fp32_modules`, non-persistent buffers (facts/diffusers_models.py)",
        "the dtype flow: the float32 value and where the method made it (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the enabled autocast region around a node, as the dtype flow records it (facts/dtypes.py `autocast_at`)",
    )
    triggers = (exact_word("ModelMixin"),)
    valid = (
        _MODEL + "class Net(ModelMixin):\n    def __init__(self):\n        super().__init__()\n        self.block = Block(4)\n"
        "    def forward(self, x, skip):\n        orig = x.dtype\n        x = F.interpolate(x.float(), skip.shape[-2:]).to(orig)\n"
        "        return self.block(x)\n",
        _MODEL + "class Net(ModelMixin):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('pe', torch.zeros(1, 4, 8).float(), persistent=False)\n"
        "    def forward(self, hidden_states):\n        hidden_states = hidden_states + self.pe.to(hidden_states.dtype)\n"
        "        return hidden_states\n",
        _MODEL + "class Net(ModelMixin):\n    _keep_in_fp32_modules = ['proj']\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n    def forward(self, t):\n        return self.proj(t.float())\n",
    )
    invalid = (
        Invalid(
            _MODEL + "class Net(ModelMixin):\n    def __init__(self):\n        super().__init__()\n        self.block = Block(4)\n"
            "    def forward(self, x, skip):\n        x = F.interpolate(x.float(), skip.shape[-2:])\n        return self.block(x)\n"
        ),
        Invalid(
            _MODEL + "class Net(ModelMixin):\n    def __init__(self):\n        super().__init__()\n"
            "        self.register_buffer('pe', torch.zeros(1, 4, 8).float(), persistent=False)\n"
            "    def forward(self, hidden_states):\n        hidden_states = hidden_states + self.pe\n        return hidden_states\n"
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._models: dict[int, bool] = {}
        self._buffers: dict[int, dict] = {}  # class -> its non-persistent buffers (one walk of __init__)

    def _model_of(self, node: cst.CSTNode) -> tuple[cst.ClassDef, cst.FunctionDef] | None:
        """The diffusers model class whose method (not ``__init__``) holds ``node``."""
        function = self.ctx.enclosing(node, cst.FunctionDef)
        if function is None or function.name.value == "__init__":
            return None
        cls = self.ctx.parent(function)
        while cls is not None and not isinstance(cls, (cst.ClassDef, cst.FunctionDef, cst.Module)):
            cls = self.ctx.parent(cls)
        if not isinstance(cls, cst.ClassDef):
            return None
        known = self._models.get(id(cls))
        if known is None:
            known = self._models[id(cls)] = dm.is_model_class(self.ctx, cls)
        return (cls, function) if known else None

    def _inside(self, origin_node: cst.CSTNode, function: cst.FunctionDef) -> bool:
        node = origin_node
        while node is not None:
            if node is function:
                return True
            node = self.ctx.parent(node)
        return False

    # -- a float32 value given to a submodule with weights -------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if not node.args or node.args[0].keyword is not None or node.args[0].star:
            return
        found = self._model_of(node)
        if found is None:
            return
        cls, function = found
        arg = node.args[0].value
        value = self.ctx.flow.value_of(arg)
        if value is None or value.kind != "tensor" or value.dtypes != frozenset({FP32}):
            return
        origin = value.origin_of(FP32)
        if origin is None or not self._inside(origin.node, function):
            return  # only a float32 this method fixes itself
        layer = dm.weighted_submodule(self.ctx, cls, node.func, node, origin.node)
        if layer is None or self.ctx.flow.autocast_at(node) is not None:
            return
        if isinstance(arg, cst.Name) and self._cast_back(function, arg.value, origin.line, node):
            return  # ``x = x.to(orig_type)`` in between: the loop's earlier float32 is the flow's join
        path = "" if not value.partial else " on one path"
        self.report(
            arg,
            f"`{code(self.ctx, arg)}` is float32{path} {value.since(FP32)} and is given, not cast back, to "
            f"{layer}, a layer with weights of the diffusers model `{cls.name.value}`: loaded with "
            f"`torch_dtype=torch.float16` (or bfloat16) its weights are in that dtype and the call fails "
            f"with a dtype mismatch; cast it to the model's dtype first (`.to(self.dtype)`, or back to the dtype "
            f"it had)",
            confidence=Confidence.MEDIUM,
        )

    def _cast_back(self, function: cst.FunctionDef, name: str, after: int, call: cst.Call) -> bool:
        """``name`` is rebound to a cast of itself (``x = x.to(orig_type)``, ``.type(...)``,
        ``.type_as(...)``) between the float32's origin line and ``call``."""
        until = self.ctx.position(call).start.line
        ctx = self.ctx
        found: list[bool] = []

        class Casts(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                value = node.value
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                        and value.func.attr.value in _CASTS_BACK \
                        and any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets) \
                        and after < ctx.position(node).start.line <= until:
                    found.append(True)

        function.body.visit(Casts())
        return bool(found)

    # -- a float32 non-persistent buffer mixed into the hidden states ---------------------------
    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, _PROMOTING):
            return
        found = self._model_of(node)
        if found is None:
            return
        cls, _function = found
        buffers = self._buffers.get(id(cls))
        if buffers is None:
            buffers = self._buffers[id(cls)] = dm.nonpersistent_buffers(cls)
        if not buffers:
            return
        for buffer_side, other in ((node.right, node.left), (node.left, node.right)):
            name = _self_attribute(buffer_side)
            if name is None or name not in buffers or not isinstance(other, cst.Name):
                continue
            if not self._rebinds(node, other.value):
                continue
            made = self.ctx.flow.value_of(dm.buffer_value(buffers[name]))
            if made is None or made.dtype != FP32:
                continue
            hidden = self.ctx.flow.value_of(other)
            if hidden is not None and (hidden.kind not in ("tensor",) or hidden.may_be(FP32, FP64)):
                continue
            if self.ctx.flow.autocast_at(node) is not None:
                return
            self.report(
                buffer_side,
                f"`self.{name}` is a float32 buffer registered with `persistent=False` "
                f"(line {self.ctx.position(buffers[name]).start.line}): diffusers' `from_pretrained(torch_dtype=...)` "
                f"loads only the checkpoint's tensors in that dtype, so it stays float32 while "
                f"`{other.value}` is float16/bfloat16 in such a model, and the result promotes `{other.value}` to float32 (the next "
                f"layer fails with a dtype mismatch); use `self.{name}.to({other.value}.dtype)`",
                confidence=Confidence.MEDIUM,
            )
            return

    def _rebinds(self, node: cst.BinaryOperation, name: str) -> bool:
        """The statement holding ``node`` assigns its result back to ``name`` (the hidden states
        carry on, promoted)."""
        statement = self.ctx.parent(node)
        while statement is not None and not isinstance(statement, (cst.Assign, cst.SimpleStatementLine)):
            statement = self.ctx.parent(statement)
        return isinstance(statement, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == name for t in statement.targets)


def _self_attribute(node: cst.BaseExpression) -> str | None:
    """``self.<name>`` or a subscript of it (``self.pe[:, :n]``): the name."""
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None

"""DTL514 lowp-rotary-angle: rotary/sinusoidal angles (positions x frequencies) computed in
float16/bfloat16 before their cos/sin (the angle facts: dtype_lint/facts/angles.py)."""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.angles import (
    POSITION_NAME,
    angle_consumer,
    autocast_guarded,
    plain_positions,
    position_source,
    runs_mixed_precision,
)
from dtype_lint.facts.flow.op_results import data_for
from dtype_lint.facts.followed import condition, followed_low
from dtype_lint.facts.numerics import BF16, FP16, number
from dtype_lint.findings import Confidence
from dtype_lint.rules.base import Invalid, Rule

LONG = {FP16: "float16", BF16: "bfloat16"}
AUTOCAST_DTYPES = {"float16": FP16, "half": FP16, "bfloat16": BF16}
# The spacing of representable values near 1000 rad (position ~1000 x frequency 1).
SPACING_NEAR_1000 = {FP16: "0.5", BF16: "4"}
# Products that make an angle from positions and frequencies, by the semantics name of the op.
PRODUCT_CALLS = {
    "torch.outer": "torch.outer", "torch.ger": "torch.outer", "torch.matmul": "torch.matmul",
    "torch.mm": "torch.mm", "torch.bmm": "torch.bmm", "torch.einsum": "torch.einsum", "torch.mul": "torch.mul",
}
PRODUCT_METHODS = {"outer": "Tensor.outer", "ger": "Tensor.outer", "matmul": "Tensor.matmul", "mm": "Tensor.mm",
                   "bmm": "Tensor.bmm", "mul": "Tensor.mul"}


def _constant(ctx, expr: cst.BaseExpression) -> bool:
    """A number: a literal, ``math.pi``, a constant name, or arithmetic of them (``2 * math.pi``)."""
    if number(ctx, expr) is not None:
        return True
    if isinstance(expr, cst.Attribute) and expr.attr.value in ("pi", "e", "tau"):
        return True
    if isinstance(expr, cst.Call) and next(iter(ctx.names.qualified_names(expr.func)), "").startswith("math."):
        return True  # ``math.log(max_period)``: a Python float
    if isinstance(expr, cst.BinaryOperation):
        return _constant(ctx, expr.left) and _constant(ctx, expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _constant(ctx, expr.expression)
    return False


class LowpRotaryAngle(Rule):
    """## What it does
    Flags the product that makes rotary or sinusoidal angles, positions times frequencies
    (`torch.outer(t, inv_freq)`, `inv_freq @ position_ids`, `einsum("i,j->ij", t, freqs)`,
    `pos * freq`), when it runs in float16 or bfloat16 and its result reaches `cos`, `sin` or
    `polar` in the same function. One operand must be positions or growing frequencies: built
    from `torch.arange`/`linspace` (through names, arithmetic, shape ops and casts, but not
    through `exp`, a reciprocal or a negative power, which make inverse frequencies of at most
    1: the angle's size is then the other operand's, unknown), or named
    `position_ids`, `positions`, `pos` (not `timesteps`: a flow-matching time lies in [0, 1]).
    The product runs in a low dtype when:
    - it is an op CUDA autocast runs in the low dtype (`@`, `matmul`, `einsum`, `bmm`: torch's
      autocast lists in the semantics data) inside an enabled autocast region the dtype flow
      knows, even when its operands were made float32 with `.float()`;
    - the dtype flow knows the result is float16/bfloat16 (operands cast to a low dtype);
    - the function follows an input's dtype (`torch.arange(..., dtype=x.dtype)` times `x`): the
      finding then says "when `x` is float16/bfloat16"; not when that input is the positions
      themselves (`rope(pos, ...)` with `dtype=pos.dtype`: low only where a caller made its
      positions low, which DTL506 reports);
    - it is such an autocast op in a module's `forward`, with no autocast region around it, in a
      file that shows its modules run under autocast (it names `autocast`/`custom_fwd`/
      `GradScaler` in code, or defines a diffusers `ModelMixin` / transformers `PreTrainedModel`
      subclass; facts/angles.py `runs_mixed_precision`): it runs in the autocast dtype whenever
      the module is called under autocast (mixed-precision training, accelerate, Lightning),
      since `.float()` on the operands does not stop autocast.
      Not when the product sits under an `if` of the `forward` (a rotary cache rebuilt when a
      longer sequence arrives, built first in `__init__` outside autocast): whether that runs,
      and under what, depends on the inputs.

    Not flagged: a product inside `with torch.autocast(..., enabled=False)` (any `with` or
    decorator that names autocast or `custom_fwd`), in an autocast region whose dtype is float32
    or not readable, `*`/`outer` of float32 operands under autocast (autocast leaves them
    float32), products whose dtype is unknown, and products whose
    value never reaches a consumer that amplifies its argument's rounding (the semantics data's
    `rounding`: `cos`, `sin`, `polar`, `tan`...).

    ## Why is this bad?
    bfloat16 holds integers exactly only up to 256 and float16 up to 2048, and near an angle of
    1000 rad their spacing is 4 and 0.5 rad: positions collapse and the rotation each token gets
    is essentially random (`cos` of `outer(arange(4096), inv_freq)` made in bfloat16 is off by up
    to 2.0, in float16 by 1.8; measured with torch 2.13). The model trains and runs, only worse on
    long contexts. huggingface/transformers disables autocast around its rotary matmul for this
    reason, diffusers fixed Cosmos' rotary embedding and Mochi's Fourier features the same way.

    ## Example
    ```python
    class Rotary(nn.Module):
        def forward(self, position_ids):
            freqs = self.inv_freq[:, None].float() @ position_ids[None, :].float()
            return freqs.cos(), freqs.sin()
    ```

    ## Use instead
    ```python
    class Rotary(nn.Module):
        def forward(self, position_ids):
            with torch.autocast(device_type=position_ids.device.type, enabled=False):
                freqs = self.inv_freq[:, None].float() @ position_ids[None, :].float()
            return freqs.cos(), freqs.sin()
    ```

    ## Fix safety
    No fix: where to leave float32 (after `cos`/`sin`, cast to the activations' dtype) depends
    on the code that follows. Medium confidence: the magnitude of the angles is not known
    statically, only that positions and frequencies make them.
    """

    code = "DTL514"
    name = "lowp-rotary-angle"
    summary = "Rotary/sinusoidal angles (positions x frequencies) computed in float16/bfloat16 before cos/sin"
    queries = (
        "positions and frequencies an operand is built from, and the cos/sin/polar the product reaches (facts/angles.py)",
        "which ops autocast runs in the low dtype and which consumers amplify their argument's rounding: torch's semantics data (facts/semantics.py `autocast_policy`, `rounding_scale`)",
        "the enabled autocast region around a node and the dtype of the product, as the dtype flow records them (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "a tensor whose dtype the function follows (facts/followed.py)",
    )
    triggers = ("cos", "sin", "polar")
    valid = (
        # positions and frequencies in float32, outer stays float32 under autocast
        "import torch\ndef rope(n, inv_freq):\n    t = torch.arange(n, dtype=torch.float32)\n"
        "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        freqs = torch.outer(t, inv_freq.float())\n"
        "        return freqs.cos(), freqs.sin()\n",
        # autocast disabled around the matmul
        "import torch\nclass Rotary(torch.nn.Module):\n    def forward(self, position_ids):\n"
        "        with torch.autocast(device_type='cuda', enabled=False):\n"
        "            freqs = self.inv_freq[:, None].float() @ position_ids[None, :].float()\n"
        "        return freqs.cos(), freqs.sin()\n",
        # no cos/sin: an attention score, not an angle
        "import torch\nclass Scores(torch.nn.Module):\n    def forward(self, q, positions):\n"
        "        return q @ positions.float()\n",
        # a plain module in a file that never shows autocast: it may never meet one
        "import torch\nclass Rotary(torch.nn.Module):\n    def forward(self, position_ids):\n"
        "        freqs = self.inv_freq[:, None].float() @ position_ids[None, :].float()\n"
        "        return freqs.cos(), freqs.sin()\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom diffusers import ModelMixin\nclass Rotary(ModelMixin):\n    def forward(self, position_ids):\n"
            "        freqs = self.inv_freq[:, None].float() @ position_ids[None, :].float()\n"
            "        return freqs.cos(), freqs.sin()\n"
        ),
        Invalid(
            "import torch\ndef rope(n, inv_freq):\n    t = torch.arange(n, dtype=torch.float32)\n"
            "    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
            "        freqs = torch.einsum('i,j->ij', t, inv_freq)\n        return freqs.cos(), freqs.sin()\n"
        ),
        Invalid(
            "import torch\ndef fourier(x):\n    freqs = torch.arange(6, 8, dtype=x.dtype, device=x.device)\n"
            "    w = 2.0 ** freqs * 6.28\n    h = w * x\n    return torch.cat([torch.sin(h), torch.cos(h)], dim=1)\n"
        ),
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.MatrixMultiply):
            self._check(node, "Tensor.__matmul__", [node.left, node.right])
        elif isinstance(node.operator, cst.Multiply):
            self._check(node, "torch.mul", [node.left, node.right])

    def visit_Call(self, node: cst.Call) -> None:
        qualified = next(iter(self.ctx.names.qualified_names(node.func)), None)
        operands = [arg.value for arg in node.args if arg.keyword is None and not isinstance(arg.value, cst.SimpleString)]
        if qualified in PRODUCT_CALLS:
            self._check(node, PRODUCT_CALLS[qualified], operands)
        elif qualified is None and isinstance(node.func, cst.Attribute) and node.func.attr.value in PRODUCT_METHODS:
            self._check(node, PRODUCT_METHODS[node.func.attr.value], [node.func.value, *operands])

    def _check(self, node: cst.CSTNode, op: str, operands: list[cst.BaseExpression]) -> None:
        if len(operands) < 2 or self.ctx.enclosing(node, cst.FunctionDef) is None:
            return
        data = data_for(self.ctx)
        if data is None:
            return
        if any(_constant(self.ctx, operand) for operand in operands):
            return  # a frequency scaled by a constant (``freqs * 2 * math.pi``): not yet the angle
        if self._exponent(node):
            return  # ``exp(arange(...) * -c)``: makes inverse frequencies, not angles
        source = next((found for operand in operands if (found := position_source(self.ctx, operand)) is not None), None)
        if source is None:
            return
        low = self._low(node, op, operands, data)
        if low is None:
            return
        dtypes, why = low
        for dtype in dtypes:
            consumer = angle_consumer(self.ctx, node, data, dtype)
            if consumer is None:
                continue
            # one finding per consumer, at the last product before it (``args = t * freqs`` rather
            # than the ``arange(...) * scale`` that made ``freqs``): kept until the module is left
            self._found.setdefault(id(consumer[0]), []).append((node, source, dtype, why, consumer))
            return

    def _exponent(self, node: cst.CSTNode) -> bool:
        """``node`` is (inside) the argument of an ``exp`` in its statement."""
        current = self.ctx.parent(node)
        while current is not None and not isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            if isinstance(current, cst.Call):
                name = next(iter(self.ctx.names.qualified_names(current.func)), None) or (
                    current.func.attr.value if isinstance(current.func, cst.Attribute) else "")
                if name.rsplit(".", 1)[-1] in ("exp", "exp2", "pow"):
                    return True
            current = self.ctx.parent(current)
        return False

    def visit_Module(self, node: cst.Module) -> None:
        self._found: dict[int, list] = {}

    def leave_Module(self, original_node: cst.Module) -> None:
        for candidates in self._found.values():
            node, source, dtype, why, consumer = max(candidates, key=lambda c: self.ctx.source_order(c[0])[0])
            self._report(node, source, dtype, why, consumer)

    def _low_positions(self, operands) -> bool:
        for operand in operands:
            value = self.ctx.flow.value_of(operand)
            if value is not None and value.dtypes and value.only(FP16, BF16) and plain_positions(self.ctx, operand):
                return True
        return False

    def _low(self, node, op: str, operands, data) -> tuple[tuple[str, ...], str] | None:
        """(the low dtypes the product runs in, why) or None."""
        guarded = autocast_guarded(self.ctx, node)
        region = self.ctx.flow.autocast_at(node)
        if region is not None and (guarded is None or region.node is guarded):
            policy = data.autocast_policy(op, region.device if region.device in ("cpu", "cuda") else "cuda")
            if policy == "lower":
                dtype = AUTOCAST_DTYPES.get(region.effective_dtype or "")
                if dtype is None:
                    # ``torch.autocast(device, torch.float32)`` (mochi's "always run rope in fp32"),
                    # or a dtype the analysis cannot read: not known to be low
                    return None
                dtypes = (dtype,)
                when = "" if region.enabled is True else " when enabled"
                return dtypes, f"the autocast region around it runs it in the low dtype{when}, whatever its operands' dtype"
        value = self.ctx.flow.value_of(node)
        if value is not None and value.dtypes and value.only(FP16, BF16):
            if self._low_positions(operands):
                return None  # positions already made low: DTL506 reports where they were
            dtypes = tuple(d for d in (BF16, FP16) if value.may_be(d))
            return dtypes, f"its result is {value.describe()}"
        if guarded is not None:
            return None
        if value is None or not value.dtypes:
            followed = followed_low(self.ctx, node)
            if followed is not None and not POSITION_NAME.match(getattr(followed[1], "name", "") or ""):
                # (a function following its positions' own dtype is low only where its caller's
                # positions are, which DTL506 reports where they are made)
                return (BF16, FP16), condition(followed[1])
        # float32 operands do not keep an autocast op in float32: only disabling autocast does
        if self._ambient_forward(node) and data.autocast_policy(op, "cuda") == "lower":
            return (BF16, FP16), ("when the module runs under autocast (mixed-precision training or inference): autocast "
                                  "runs this op in the low dtype even for float32 operands, and nothing here disables it")
        return None

    def _ambient_forward(self, node: cst.CSTNode) -> bool:
        """``node`` is in a module's ``forward``, with no autocast region the flow knows around it."""
        function = self.ctx.enclosing(node, cst.FunctionDef)
        if function is None or function.name.value != "forward" or self.ctx.enclosing(function, cst.ClassDef) is None:
            return False
        if isinstance(self.ctx.enclosing(node, cst.If, cst.FunctionDef), cst.If):
            # ``if seq_len > self.max_seq_len_cached:`` rebuilding a cache that ``__init__`` built
            # outside any autocast: whether it ever runs, and under what, depends on the inputs
            return False
        if not runs_mixed_precision(self.ctx):
            return False  # nothing in the file says its modules ever meet autocast
        return not self.ctx.flow.autocast_stack_at(node)

    def _report(self, node, source, dtype: str, why: str, consumer) -> None:
        call, op, scale = consumer
        name = LONG[dtype]
        spelled = self.ctx.code_for(source).strip()
        spelled = spelled if len(spelled) <= 40 else spelled[:37] + "..."
        message = (
            f"angles `{self._short(node)}` from positions/frequencies (`{spelled}`) are made in {name}: {why}; "
            f"near 1000 rad {name} values are {SPACING_NEAR_1000[dtype]} rad apart, so `{op.split('.')[-1]}` at line "
            f"{self.ctx.position(call).start.line} loses the phase (torch: rounding its argument to {name} errs past "
            f"tolerance from |x| >= {scale:g}); compute the angles in float32 (`.float()` operands, and "
            "`torch.autocast(..., enabled=False)` around an autocast op) and cast after cos/sin"
        )
        self.report(node, message, confidence=Confidence.MEDIUM)

    def _short(self, node) -> str:
        text = " ".join(self.ctx.code_for(node).split())
        return text if len(text) <= 60 else text[:57] + "..."

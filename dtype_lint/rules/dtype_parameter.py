"""DTL113: a function takes a dtype and returns tensors, but one of them ignores it.

The function's results come from the dtype flow run as a caller would run it, the dtype
parameter tried with float16 and bfloat16 (dtype_lint/project/results.py): a returned tensor
that takes the dtype it is given *follows* the parameter; one that stays float32 whatever it is
given, made by a factory without ``dtype=``, does not.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.dtypes import FP32
from dtype_lint.findings import Confidence
from dtype_lint.facts.dtype_arguments import float32_callers
from dtype_lint.project.results import dtype_parameters, follower, probe
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.model_input import code


class DtypeParameterIgnored(Rule):
    """## What it does
    Flags a tensor a function returns in float32 whatever dtype it is asked for, when the
    function takes a dtype parameter (`dtype=`, `dtype_override=`, `torch_dtype=`) that another
    tensor it returns with it follows: `pixel_values.to(dtype_override)` beside
    `torch.zeros(batch, n)` without `dtype=`. Low confidence when the function is called in its
    own file and every such call asks for float32 (`self.prepare_latents(..., torch.float32,
    ...)`, facts/dtype_arguments.py): the mix needs a caller elsewhere.

    ## Why is this bad?
    A caller that asks for bfloat16 (or float16) gets one tensor in that dtype and one in
    float32, and the model it feeds them to fails with `mat1 and mat2 must have the same dtype,
    but got Float and BFloat16` (tenstorrent/tt-xla#4574), or silently computes part of the
    forward in float32.

    ## Example
    ```python
    def load_inputs(self, dtype_override=None):
        pixel_values = torch.randn(1, 3, 32, 32)
        if dtype_override is not None:
            pixel_values = pixel_values.to(dtype_override)
        pixel_mask = torch.zeros(1, 1024)
        return pixel_values, pixel_mask
    ```

    ## Use instead
    ```python
    def load_inputs(self, dtype_override=None):
        dtype = dtype_override if dtype_override is not None else torch.float32
        pixel_values = torch.randn(1, 3, 32, 32, dtype=dtype)
        pixel_mask = torch.zeros(1, 1024, dtype=dtype)
        return pixel_values, pixel_mask
    ```

    ## Fix safety
    No fix: whether the tensor should follow the dtype (a mask added to activations) or stay as
    it is (float32 targets for a loss) is the author's choice.
    """

    code = "DTL113"
    name = "dtype-parameter-ignored"
    summary = "Function returns tensors in the dtype it is given, and one in float32 regardless"
    queries = (
        "what a function returns when the dtype flow runs it with its dtype parameter set to float16 and to bfloat16, and which returned tensor follows that parameter (project/results.py, running facts/flow/interpreter.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "the dtype the file's own calls of the function pass it (facts/dtype_arguments.py)",
    )
    # A dtype parameter is spelled ``dtype`` / ``precision`` or defaults to a dtype spelling.
    triggers = ("dtype", "precision", "float", "half", "double", "fp16", "bf16", "fp32")
    valid = (
        "import torch\ndef inputs(dtype_override=None):\n    dtype = dtype_override if dtype_override is not None else torch.float32\n"
        "    x = torch.randn(2, 4, dtype=dtype)\n    mask = torch.zeros(2, 4, dtype=dtype)\n    return x, mask\n",
        "import torch\ndef batch(dtype=torch.float16):\n    x = torch.randn(2, 4).to(dtype)\n    labels = torch.randint(0, 3, (2,))\n    return x, labels\n",
        "import torch\ndef pair(n):\n    return torch.zeros(n), torch.ones(n)\n",
    )
    invalid = (
        Invalid(
            "import torch\ndef inputs(dtype_override=None):\n    x = torch.randn(2, 4)\n    if dtype_override is not None:\n"
            "        x = x.to(dtype_override)\n    mask = torch.zeros(2, 4)\n    return x, mask\n"
        ),
        Invalid(
            "import torch\nclass Loader:\n    def sample(self, n, torch_dtype=torch.float16):\n"
            "        latents = torch.randn(n, 4, 8, 8).to(torch_dtype)\n        timesteps = torch.rand(n)\n"
            "        return latents, timesteps\n"
        ),
    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not dtype_parameters(self.ctx, node):
            return
        block = self.ctx.parent(node)
        probed = probe(self.ctx, node, method=block is not None and isinstance(self.ctx.parent(block), cst.ClassDef))
        if probed is None:
            return
        plain, probes, _ = probed
        if not probes or plain is None or plain.kind != "tuple" or plain.info == "comprehension" or not plain.items:
            return
        followed = [(index, follower(probes, index)) for index in range(len(plain.items))]
        names = sorted({name for _, name in followed if name})
        if not names:
            return
        inside = self.ctx.source_order(node)  # (positions would cost a codegen of the file)
        for index, name in followed:
            item = plain.items[index]
            if name is not None or item is None or item.kind != "tensor" or not item.certain or item.dtype != FP32:
                continue
            origin = item.origin_of(FP32)
            made = origin.node if origin is not None and type(origin).__name__ == "Origin" else None
            if not isinstance(made, cst.Call) or not self._factory(made):
                continue
            made_at = self.ctx.source_order(made)
            if not (inside[0] < made_at[0] and made_at[1] < inside[1]):
                continue  # made in another function (a helper's result): reported there
            sibling = next(i for i, n in followed if n)
            # the file's own calls all ask for float32: the mixed dtypes need a caller elsewhere
            asked = float32_callers(self.ctx, node, names[0])
            self.report(
                made,
                f"`{code(self.ctx, made)}` is float32 whatever `{names[0]}` asks for, while item {sibling} of what "
                f"`{node.name.value}()` returns takes `{names[0]}`: a caller asking for bfloat16 or float16 gets "
                f"mixed dtypes (mat1 and mat2 must have the same dtype, but got Float and BFloat16); give it "
                f"`dtype=` (or `.to({names[0]})`)"
                + (f" (this file's calls of it, line {', '.join(map(str, asked))}, ask for float32)" if asked else ""),
                confidence=Confidence.LOW if asked else Confidence.MEDIUM,
            )

    def _factory(self, call: cst.Call) -> bool:
        """``torch.zeros(...)``-like: a torch function made the float32 (no ``dtype=`` given)."""
        return any(q.startswith("torch.") for q in self.ctx.names.qualified_names(call.func)) and not any(
            arg.keyword is not None and arg.keyword.value == "dtype" for arg in call.args
        )

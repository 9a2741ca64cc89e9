"""DTL101-DTL106: a module or op receives a tensor of a dtype it cannot take.

Every rule here asks the dtype flow (``ctx.flow``) what a module and its inputs are at the call;
none re-derives a dtype. Unknown dtypes stay silent.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import libcst as cst

from dtype_lint.facts import component_inputs
from dtype_lint.facts.batch_entry import batch_binding
from dtype_lint.facts.dtypes import BF16, BOOL, FP16, FP32, FP64, INT, LONG_NAMES, LOW, Value
from dtype_lint.facts.flow.values import EntryOrigin
from dtype_lint.facts.flow.library import LOWP_TRIGGERS, autoencoder_input_method, parameterless, runs_input_as_given
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import child_nodes, walk
from dtype_lint.findings import Confidence, Edit, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule

LOSS_FUNCTIONS = frozenset(
    """cross_entropy binary_cross_entropy binary_cross_entropy_with_logits nll_loss mse_loss l1_loss
    smooth_l1_loss huber_loss kl_div soft_margin_loss multilabel_soft_margin_loss cosine_embedding_loss
    margin_ranking_loss poisson_nll_loss gaussian_nll_loss""".split()
)
LOSS_CLASS = re.compile(r"Loss$")
TORCH_LAYER = re.compile(r"^torch\.nn\.(modules\.[\w.]+\.)?[A-Z]\w*$")
CASTS_IN_FORWARD = re.compile(r"\.(to|half|float|bfloat16|double|type|type_as)\(|\.dtype\b|autocast")
ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)

# Prefilter triggers for float64 (see dtype_lint.prefilter and facts/flow/library.py). The flow
# learns that a tensor is float64 from a dtype spelling (``torch.float64``, ``torch.double``,
# ``"fp64"``, ``np.float_``, ``.double()``, ``DoubleTensor``), or from a NumPy array (a NumPy
# float factory needs ``import numpy``; ``x.astype(float)``) turned into a tensor, which only a
# ``torch.*`` function does (``from_numpy``, ``tensor``, ``as_tensor``). So a float64 tensor needs
# a word of FP64_SPELLED, or a word of NUMPY_FP64 and the word ``torch``.
FP64_SPELLED = (exact_word("float64"), exact_word("double"), exact_word("fp64"), exact_word("float_"), exact_word("DoubleTensor"))
NUMPY_FP64 = (exact_word("numpy"), exact_word("astype"), exact_word("soundfile"))  # soundfile: float64 reads
TORCH = exact_word("torch")


# Ops that multiply or convolve two float tensors and never promote between them (outside
# autocast): function -> positions of the tensor operands. ``x.mm(y)``-style methods take the
# receiver as operand 0. Source: the "mat1 and mat2 must have the same dtype" / "expected scalar
# type Half but found Float" errors of torch 2.x (RULES.md section 3, m1-m5).
MATMUL_FUNCTIONS = {
    "torch.mm": (0, 1), "torch.bmm": (0, 1), "torch.matmul": (0, 1), "torch.mv": (0, 1),
    "torch.addmm": (0, 1, 2), "torch.baddbmm": (0, 1, 2), "torch.nn.functional.linear": (0, 1, 2),
    "torch.nn.functional.conv1d": (0, 1, 2), "torch.nn.functional.conv2d": (0, 1, 2),
    "torch.nn.functional.conv3d": (0, 1, 2), "torch.nn.functional.conv_transpose1d": (0, 1, 2),
    "torch.nn.functional.conv_transpose2d": (0, 1, 2), "torch.nn.functional.conv_transpose3d": (0, 1, 2),
}
MATMUL_METHODS = frozenset({"mm", "bmm", "matmul", "mv"})
# The keyword spelling of each operand position, for calls that name them.
OPERAND_KEYWORDS = {0: ("input", "self"), 1: ("weight", "mat2", "other", "vec", "mat1", "batch1"), 2: ("bias", "mat2", "batch2")}


def matmul_operands(ctx, node: cst.CSTNode) -> tuple[str, list[cst.BaseExpression]] | None:
    """``(op name, operand nodes)`` of a matmul/linear/conv call or an ``a @ b``, else None."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        return "@", [node.left, node.right]
    if not isinstance(node, cst.Call):
        return None
    for qualified in ctx.names.qualified_names(node.func):
        positions = MATMUL_FUNCTIONS.get(qualified)
        if positions is not None:
            positional = [a.value for a in node.args if a.keyword is None and not a.star]
            named = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
            operands = []
            for position in positions:
                if position < len(positional):
                    operands.append(positional[position])
                else:
                    operands.extend(named[k] for k in OPERAND_KEYWORDS[position] if k in named)
            return qualified.replace("torch.nn.functional.", "F."), operands
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in MATMUL_METHODS and len(node.args) == 1:
        receiver = ctx.flow.value_of(node.func.value)
        if receiver is not None and receiver.kind == "tensor":
            return f".{node.func.attr.value}()", [node.func.value, node.args[0].value]
    return None


def from_numpy(ctx, value: Value) -> bool:
    """A float64 tensor whose float64 comes from a NumPy array (``torch.from_numpy(np.random...)``)."""
    origin = value.origin_of(FP64)
    if origin is None:
        return False
    if origin.numpy:
        return True  # a NumPy array in the project function that returned it
    produced = ctx.flow.value_of(origin.node)
    if produced is not None and produced.kind == "numpy":
        return True
    if produced is not None and produced.kind == "tuple" and any(
            item is not None and item.kind == "numpy" and FP64 in item.dtypes for item in produced.items or ()):
        return True  # ``audio, sr = soundfile.read(path)``: the reader's samples
    # ``torch.from_numpy(features).double()``: an explicit float64 cast of NumPy data
    receiver = _cast_receiver(origin.node)
    if receiver is None:
        return False
    converted = ctx.flow.value_of(receiver)
    return converted is not None and converted.kind == "tensor" and from_numpy(ctx, converted)


def _cast_receiver(node: cst.CSTNode) -> cst.BaseExpression | None:
    """``x`` of ``x.double()`` / ``x.to(...)`` / ``x.type(...)``: a tensor cast in place of its data."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value in ("double", "to", "type"):
        return node.func.value
    return None


# -- shared helpers ---------------------------------------------------------------------------
def code(ctx, node: cst.CSTNode, limit: int = 50) -> str:
    text = " ".join(ctx.code_for(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def dtype_phrase(value: Value, dtype: str | None = None) -> str:
    """``float16 since line 4 (`model.half()`)``."""
    since = value.since(dtype)
    return f"{value.describe()}{' ' + since if since else ''}"


def callee_module(ctx, call: cst.Call) -> tuple[Value | None, cst.BaseExpression]:
    """The module a call runs on its arguments (``model(x)``, ``self.net(x)``, ``model.forward(x)``,
    ``vae.encode(x)``: a method of a module class of this file that calls its layers and does not
    cast its inputs)."""
    value = ctx.flow.value_of(call.func)
    if value is not None and value.kind == "module":
        return value, call.func
    if isinstance(call.func, cst.Attribute):
        value = ctx.flow.value_of(call.func.value)
        if value is not None and value.kind == "module" and (
                call.func.attr.value == "forward" or _method_runs_layers(ctx, value, call.func.attr.value)
                or autoencoder_input_method(ctx.names, value.info, call.func.attr.value)):
            return value, call.func.value
    return None, call.func


def autoencoder_call(ctx, module: Value, call: cst.Call) -> bool:
    """``vae.encode(x)`` / ``vae.decode(z)`` on a diffusers autoencoder: its layers meet ``x`` as
    given, as a torch layer's would (library.AUTOENCODER_CLASSES)."""
    return isinstance(call.func, cst.Attribute) and autoencoder_input_method(ctx.names, module.info, call.func.attr.value)


def only_compared(ctx, module: Value, call: cst.Call, arg: cst.Arg, index: int) -> bool:
    """The module is a class of this file whose ``forward`` uses the parameter ``arg`` binds to
    only in comparisons and shape/device reads (``scores.masked_fill(mask == 0, ...)``): that
    argument becomes a bool mask or a size and never meets the weights."""
    if not isinstance(module.info, str) or "." in module.info:
        return False
    forward = _class_method(ctx.module, module.info, "forward")
    if forward is None or not isinstance(call.func, (cst.Name, cst.Attribute)) or \
            isinstance(call.func, cst.Attribute) and call.func.attr.value in ("forward",):
        return False
    params = [p.name.value for p in (*forward.params.posonly_params, *forward.params.params)][1:]
    name = arg.keyword.value if arg.keyword is not None else (params[index] if index < len(params) else None)
    if name is None:
        return False
    uses = [node for node in walk(forward.body) if isinstance(node, cst.Name) and node.value == name]
    if not uses:
        return False
    parents = {}
    for node in walk(forward.body):
        for child in child_nodes(node):
            parents[id(child)] = node
    for use in uses:
        parent = parents.get(id(use))
        if isinstance(parent, cst.Comparison) or isinstance(parent, cst.ComparisonTarget):
            continue
        if isinstance(parent, cst.Attribute) and parent.attr.value in ("shape", "device", "dtype", "ndim", "size", "dim"):
            continue
        return False
    return True


@functools.lru_cache(maxsize=64)
def _class_method(module: cst.Module, class_name: str, method: str) -> cst.FunctionDef | None:
    for statement in module.body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == class_name:
            body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ()
            return next((item for item in body if isinstance(item, cst.FunctionDef) and item.name.value == method), None)
    return None


def _method_runs_layers(ctx, module: Value, method: str) -> bool:
    if method.startswith("_") or not isinstance(module.info, str) or "." in module.info:
        return False
    return _class_method_runs_layers(ctx.module, module.info, method)


@functools.lru_cache(maxsize=64)
def _class_method_runs_layers(module: cst.Module, class_name: str, method: str) -> bool:
    """``class_name.method`` calls a layer of ``self`` (``self.conv_in(x)``) without casting."""
    for statement in module.body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == class_name:
            body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ()
            methods = {item.name.value for item in body if isinstance(item, cst.FunctionDef)}
            for item in body:
                if isinstance(item, cst.FunctionDef) and item.name.value == method:
                    if CASTS_IN_FORWARD.search(module.code_for_node(item)):
                        return False
                    return any(isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                               and isinstance(node.func.value, cst.Name) and node.func.value.value == "self"
                               and node.func.attr.value not in methods for node in walk(item.body))
    return False


def is_loss_module(value: Value) -> bool:
    return isinstance(value.info, str) and bool(LOSS_CLASS.search(value.info))


def is_torch_layer(value: Value) -> bool:
    return isinstance(value.info, str) and bool(TORCH_LAYER.match(value.info))


def loss_name(ctx, call: cst.Call) -> str | None:
    """``F.cross_entropy`` / ``nn.CrossEntropyLoss()`` instance -> the loss's short name."""
    for qualified in ctx.names.qualified_names(call.func):
        module, _, attr = qualified.rpartition(".")
        if module in ("torch.nn.functional", "torch") and attr in LOSS_FUNCTIONS:
            return attr
    value = ctx.flow.value_of(call.func)
    if value is not None and value.kind == "module" and is_loss_module(value):
        return value.info.rsplit(".", 1)[-1]
    return None


@functools.lru_cache(maxsize=64)
def _class_forward_casts(module: cst.Module, class_name: str) -> bool:
    for statement in module.body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == class_name:
            body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ()
            for item in body:
                if isinstance(item, cst.FunctionDef) and item.name.value == "forward":
                    return bool(CASTS_IN_FORWARD.search(module.code_for_node(item)))
    return False


NOT_DATA_ATTRIBUTES = frozenset({"shape", "size", "device", "dtype", "ndim", "dim", "is_cuda", "numel"})


def _forward_of(ctx, class_name: str) -> cst.FunctionDef | None:
    for statement in ctx.module.body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == class_name:
            body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ()
            return next((i for i in body if isinstance(i, cst.FunctionDef) and i.name.value == "forward"), None)
    return None


def _parameter_of(forward: cst.FunctionDef, call: cst.Call, arg: cst.Arg) -> str | None:
    """The parameter of ``forward`` (``self`` first) that ``arg`` of ``model(...)`` binds."""
    params = [p.name.value for p in (*forward.params.posonly_params, *forward.params.params)][1:]
    if arg.keyword is not None:
        names = params + [p.name.value for p in forward.params.kwonly_params]
        return arg.keyword.value if arg.keyword.value in names else None
    index = [a for a in call.args if a.keyword is None].index(arg)
    return params[index] if index < len(params) else None


def never_meets_weights(ctx, module: Value, call: cst.Call, arg: cst.Arg) -> bool:
    """The model's forward (a class of this file) only compares the tensor ``arg`` binds
    (``mask == 0``) or reads its shape or device: it never reaches a layer, so its dtype
    cannot mismatch the weights."""
    forward = _forward_of(ctx, module.info) if isinstance(module.info, str) and "." not in module.info else None
    name = _parameter_of(forward, call, arg) if forward is not None else None
    if name is None:
        return False
    for node in walk(forward.body):
        if not (isinstance(node, cst.Name) and node.value == name):
            continue
        parent = ctx.parent(node)
        if isinstance(parent, cst.Comparison) or isinstance(parent, cst.ComparisonTarget):
            continue
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in NOT_DATA_ATTRIBUTES:
            continue
        return False
    return True


def forward_casts_inputs(ctx, module: Value) -> bool:
    """A user class whose ``forward`` casts (``x.to(self.dtype)``): it adapts its inputs itself."""
    if not isinstance(module.info, str) or "." in module.info:
        return False
    return _class_forward_casts(ctx.module, module.info)


def in_named_autocast(ctx, node: cst.CSTNode) -> bool:
    """Inside ``with <something>autocast<something>(...):`` that the flow does not resolve
    (lerobot's ``policy._autocast_context()``, defined in another file, returns
    ``torch.autocast(bf16)``): an autocast region of unknown dtype, where "no autocast region is
    active" cannot be claimed."""
    statement = ctx.enclosing(node, cst.With)
    while statement is not None:
        for item in statement.items:
            call = item.item
            name = dotted_name(call.func) if isinstance(call, cst.Call) else None
            if name is not None and "autocast" in name.rsplit(".", 1)[-1].lower():
                return True
        statement = ctx.enclosing(statement, cst.With)
    return False


def arguments(call: cst.Call):
    yield from call.args


def with_suffix(ctx, node: cst.BaseExpression, suffix: str) -> str:
    text = ctx.code_for(node)
    return f"{text}{suffix}" if isinstance(node, ATOMIC) else f"({text}){suffix}"


def suffix_edit(rule: Rule, node: cst.BaseExpression, suffix: str) -> Edit:
    """An edit that appends ``suffix`` to ``node`` (``x`` -> ``x.float()``, ``a + b`` -> ``(a + b).float()``).

    A parenthesised node's range excludes its parentheses: the suffix goes after them.
    """
    rpar = "".join(rule.ctx.module.code_for_node(p) for p in getattr(node, "rpar", ()))
    if rpar and "\n" not in rpar:
        end = rule.ctx.position(node).end
        column = end.column + 1 + len(rpar)
        return Edit(end.line, column, end.line, column, suffix)
    return rule.replace(node, with_suffix(rule.ctx, node, suffix))


def model_dtype_expression(ctx, module_node: cst.BaseExpression, module: Value) -> str:
    text = ctx.code_for(module_node)
    if isinstance(module.info, str) and not module.info.startswith("torch.") and module.info[:1].isupper() and (
        "Model" in module.info or module.info.startswith(("Auto", "UNet", "Autoencoder"))
    ):
        return f"{text}.dtype"  # transformers / diffusers models carry .dtype
    return f"next({text}.parameters()).dtype"


# -- DTL101 -----------------------------------------------------------------------------------
class LowpModelFp32Input(Rule):
    """## What it does
    Flags a call of a module that was cast to float16/bfloat16 (`model.half()`,
    `model.to(torch.bfloat16)`, `dtype=` on a torch.nn layer) on a tensor the dtype flow knows is
    float32 (a factory without `dtype=`, `.float()`, a float32 helper's result), outside any
    autocast region. Hugging Face models loaded with `dtype=float16` are reported at low
    confidence only: many of them cast their inputs (ViT casts `pixel_values`); diffusers'
    denoisers and autoencoders (`UNet2DConditionModel`, the DiT transformers, `ControlNetModel`,
    `AutoencoderKL`), which run their first layer on the input as given, at medium, and so is a
    diffusers autoencoder's `vae.encode(x)` / `vae.decode(z)` (it hands `x` to its first conv as
    given: huggingface/diffusers#1543). A submodule
    called on `self` (`self.encoder(x.float())`) is reported at the caller, except in a class
    the whole-program pass checks under a precision world (cast, or handed to DeepSpeed or
    Lightning in float16, in another file) that does not keep that submodule float32 itself.
    Inside a
    module's `forward`, a `self.<attr>(x)` call is reported when that submodule was cast apart
    from the rest of the model (`model.backbone.half()` in an inference helper, in any file
    of the checked paths) and `x` comes from the float32 rest (`self.backbone(self.stem(x))`);
    a call on a submodule that only follows its model's cast is reported at the model's call.
    A function monkeypatched in as the forward of a cast model's modules (`module.forward =
    fn.__get__(module)`, `types.MethodType(fn, module)`) runs with `self` in the model's dtype,
    so a buffer it makes without `dtype=` and hands to `self.to_out(...)` is reported there.
    When the float32 input was taken out of a DataLoader batch in the same training step
    (`prompt_embeds = batch["prompt_embeds"]`, then maybe reshaped or concatenated with float16
    latents), the finding is reported at that assignment, where the cast to the model's dtype
    belongs, once however many models the value reaches.

    A diffusers pipeline's safety checker or depth estimator (facts/component_inputs.py) is in
    the pipeline's dtype, float16/bfloat16 when it is loaded with `torch_dtype=torch.float16`.
    Where the file shows the pipeline runs so (it spells that `torch_dtype`, or casts its inputs
    to a dtype known at run time, `.to(dtype=dtype)`) and the input the pipeline gives it is
    float32 on every path (an image processor's `pixel_values`: `self.feature_extractor(images,
    return_tensors="pt")` gives float32, and `.to(device)` keeps it), outside autocast (or under
    a context that is `contextlib.nullcontext()` on one path), it is reported at medium
    confidence, at the `.to(device)` that moved the input without a dtype when there is one
    (huggingface/diffusers 72eae64, 05be622). An input of unknown dtype stays silent.

    ## Why is this bad?
    Linear, conv, norm and RNN layers need the input to have the weights' dtype. The call fails
    with `expected scalar type Half but found Float`, `mat1 and mat2 must have the same dtype` or
    `Input type (float) and bias type (c10::Half) should be the same`. Autocast would cast the
    input; a hand-cast model does not.

    ## Example
    ```python
    model = model.half()
    inputs = torch.randn(1, 10)
    output = model(inputs)
    ```

    ## Use instead
    ```python
    model = model.half()
    inputs = torch.randn(1, 10, dtype=torch.float16)  # or inputs.to(model's dtype)
    output = model(inputs)
    ```
    or keep the model in float32 and run the forward pass under `torch.autocast`.

    ## Fix safety
    Unsafe: the fix casts the input with `x.to(<model dtype>)`, which lowers its precision; it
    is offered only where the input is a plain argument.
    """

    code = "DTL101"
    name = "lowp-model-fp32-input"
    summary = "Half/bfloat16 model called on a float32 tensor outside autocast"
    queries = (
        "the dtype flow: the dtype of the called module and of the tensor given to it, each with where it came from (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the enabled autocast region around a node, as the dtype flow records it (facts/dtypes.py `autocast_at`)",
        "in a project check, the precision world the project pass found for the enclosing module class (facts/flow/seeding.py)",
        "where the step takes a float32 input out of a DataLoader batch, through its own assignments (facts/batch_entry.py)",
        "a library object's component in the library's low dtype given a float32 tensor, such as an image processor's pixel_values (facts/component_inputs.py, catalog in facts/lowp_contract.py and facts/flow/library.py)",
    )
    fix_safety = Safety.UNSAFE
    # The called module must be float16/bfloat16 (``module.dtypes & LOW``), or a diffusers
    # pipeline's component, in the dtype it runs without spelling it (facts/component_inputs.py).
    triggers = LOWP_TRIGGERS + ("DiffusionPipeline",)
    valid = (
        "import torch\nmodel = torch.nn.Linear(10, 2).half()\nx = torch.randn(1, 10).half()\nmodel(x)\n",
        "import torch\nmodel = torch.nn.Linear(10, 2)\nwith torch.autocast('cuda'):\n    model(torch.randn(1, 10))\n",
        # a project's own autocast helper, defined elsewhere (lerobot's molmoact2 test)
        "import torch\nblock = torch.nn.Linear(4, 4).to(dtype=torch.bfloat16)\nwith policy._autocast_context():\n"
        "    y = block(torch.ones(2, 4, dtype=torch.float32))\n",
        "import torch\nmodel = torch.nn.Linear(10, 2).half()\nmodel(batch)\n",
        "import torch\nmodel = AutoModel.from_pretrained('m', torch_dtype=torch.float16)\nids = tok('hi', return_tensors='pt')\nmodel(**ids)\n",
        "import torch\nclass Predictor:\n    def __init__(self):\n        self.model = torch.nn.Conv2d(3, 3, 3).half()\n"
        "    def predict(self, image):\n        return self.model(image.to(next(self.model.parameters()).dtype))\n",
    )
    invalid = (
        Invalid(
            "import torch\nmodel = torch.nn.Linear(10, 2)\nmodel = model.half()\ninputs = torch.randn(1, 10)\noutput = model(inputs)\n",
            fixed="import torch\nmodel = torch.nn.Linear(10, 2)\nmodel = model.half()\ninputs = torch.randn(1, 10)\noutput = model(inputs.to(next(model.parameters()).dtype))\n",
        ),
        Invalid(
            "import torch\nnet = torch.nn.Conv2d(3, 8, 3).to('cuda', torch.bfloat16)\nimg = torch.rand(1, 3, 32, 32)\nnet(img)\n",
            fixed="import torch\nnet = torch.nn.Conv2d(3, 8, 3).to('cuda', torch.bfloat16)\nimg = torch.rand(1, 3, 32, 32)\nnet(img.to(next(net.parameters()).dtype))\n",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = nn.Linear(4, 2)\n    def forward(self, x):\n        return self.fc(x)\n"
            "net = Net()\nif args.fp16:\n    net.half()\nnet(torch.ones(1, 4))\n"
        ),
        Invalid(
            "import torch\nclass Predictor:\n    def __init__(self, fp16=False):\n        self.model = torch.nn.Conv2d(3, 3, 3)\n"
            "        if fp16:\n            self.model = self.model.half()\n    def warmup(self):\n"
            "        return self.model(torch.ones(1, 3, 8, 8))\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        flow = self.ctx.flow
        module, module_node = callee_module(self.ctx, node)
        if module is None or not module.dtypes & LOW or is_loss_module(module) or module.role == "quantized":
            return
        if parameterless(module.info):
            return  # an activation/dropout/pooling layer has no weights to mismatch
        if isinstance(module.info, str) and "Pipeline" in module.info:
            return  # pipelines prepare (and cast) their own inputs
        if flow.autocast_at(node) is not None or module.autocast or forward_casts_inputs(self.ctx, module):
            return
        if in_named_autocast(self.ctx, node):
            return
        low = FP16 if FP16 in module.dtypes else next(d for d in ("bf16",) if d in module.dtypes)
        if _root_name(module_node) == "self" and _in_module_class(self.ctx, node) \
                and not _runs_in_world(self.ctx, node, module_node) \
                and not part_meets_here(self.ctx, module_node, module, low):
            # ``self.dense(x)`` in a forward the flow ran for ``model(x)``: the dtype of ``self``
            # is the caller's, and the finding belongs (and is reported) at that call. A plain
            # class (a predictor holding ``self.model``) owns its attributes' dtypes: report here;
            # so does a class the project pass checks under a precision world (no caller here),
            # and a part cast apart from the model (``model.backbone.half()``).
            return
        for index, arg in enumerate(arguments(node)):
            if arg.star:
                continue  # ``**inputs``: Hugging Face models cast pixel_values to their dtype themselves
            value = flow.value_of(arg.value)
            if value is not None and value.kind == "tensor" and value.dtype == FP32 and value.autocast is None \
                    and not never_meets_weights(self.ctx, module, node, arg):
                if only_compared(self.ctx, module, node, arg, index):
                    continue  # ``mask == 0``: the forward never lets it meet the weights
                self._flag(node, module, module_node, arg, value, low, fixable=True)
                return

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # A pipeline's component, in the pipeline's dtype, given a float32 input it made itself
        # (an image processor's pixel_values): facts/component_inputs.py.
        for found in component_inputs.inputs_in(self.ctx, node):
            line = self.ctx.position
            argument = code(self.ctx, found.argument)
            moved = "" if found.moved is None else (
                f", and `.to({', '.join(' '.join(self.ctx.code_for(a).split()).rstrip(', ') for a in found.moved.args)})`"
                f" at line {line(found.moved).start.line} moves it without a dtype")
            autocast = "" if found.null_context is None else (
                f" (the autocast region around the call is `{code(self.ctx, found.null_context)}` on one path,"
                f" line {line(found.null_context).start.line})")
            value = self.ctx.flow.value_of(found.argument)
            self.report(
                found.moved if found.moved is not None else found.argument,
                f"`{found.component}` is in the pipeline's dtype, float16/bfloat16 when it is loaded with"
                f" `torch_dtype=torch.float16` ({found.evidence}), but `{argument}` is"
                f" {dtype_phrase(value)}{moved}; `{code(self.ctx, found.call.func)}` (line {line(found.call).start.line})"
                f" runs its first layer on it outside autocast{autocast}: Input type (float) and bias type"
                " (c10::Half) should be the same; cast it to the pipeline's dtype (`.to(device=device, dtype=dtype)`)",
                confidence=Confidence.MEDIUM,
            )

    @staticmethod
    def _own_or_torch(module: Value) -> bool:
        """A torch.nn layer, a torchvision/timm model, or a class defined in this file."""
        info = module.info if isinstance(module.info, str) else ""
        return info.startswith(("torch.nn", "torchvision.", "timm.")) or (bool(info) and "." not in info and not (
            info.startswith(("Auto", "UNet", "Autoencoder")) or "Model" in info or "Pipeline" in info
        ))

    def _library_class(self, module: Value) -> bool:
        """The module's class is not one this file defines (a file's own ``UNet2DConditionModel``
        may cast its inputs)."""
        name = module.info.rsplit(".", 1)[-1] if isinstance(module.info, str) else ""
        return not any(isinstance(n, cst.ClassDef) and n.name.value == name for n in self.ctx.module.body)

    def _flag(self, node, module, module_node, arg, value, low, fixable) -> None:
        name = code(self.ctx, module_node)
        argument = code(self.ctx, arg.value)
        if not module.info:
            # A model built elsewhere (``attempt_load(weights)``): it may cast its own inputs.
            confidence = Confidence.MEDIUM
        elif not self._own_or_torch(module) and not (runs_input_as_given(module.info) and self._library_class(module)) \
                and not autoencoder_call(self.ctx, module, node):
            # transformers models often cast their inputs (ViT casts pixel_values); diffusers'
            # denoisers and autoencoders do not (library.DIFFUSERS_UNCAST_INPUT_MODELS), nor does an
            # autoencoder's ``encode``/``decode`` (library.AUTOENCODER_CLASSES).
            confidence = Confidence.LOW
        elif module.certain:
            confidence = Confidence.HIGH
        else:
            confidence = Confidence.MEDIUM
        message = (
            f"`{name}` is {dtype_phrase(module, low)}, but `{argument}` is {dtype_phrase(value)} and no "
            f"autocast region is active: the call fails with a dtype mismatch (expected scalar type "
            f"{'/'.join(n for d, n in ((FP16, 'Half'), ('bf16', 'BFloat16')) if d in module.dtypes)} but found "
            f"Float); cast the input or use autocast"
        )
        if _aliasing_cast(self.ctx, module_node, module.origin_of(low)) is not None:
            # ``fp16_model = model.half()`` then ``model(x)``: the cast changed ``model`` too (a
            # module casts in place and returns itself). One defect, reported once, at the cast,
            # by DTL407 (cast-alias-original), where the fix (``deepcopy`` first) goes.
            return
        entry = batch_binding(self.ctx, arg.value)
        if entry is not None:
            # The float32 part was taken out of a DataLoader batch in this step: the cast belongs
            # where it is taken (facts/batch_entry.py), and the finding is reported there.
            statement, bound = entry
            reported = self.__dict__.setdefault("_batch_entries", set())
            if id(statement) in reported:
                return  # one finding per place the batch value is taken, however many models it reaches
            reported.add(id(statement))
            call_line = self.ctx.position(node).start.line
            via = "" if bound.value == argument else f" (through `{argument}`)"
            message = (
                f"`{bound.value}` is taken from the DataLoader batch as {dtype_phrase(value)} and reaches "
                f"`{name}`{via} at line {call_line}, which is {dtype_phrase(module, low)}, with no autocast region "
                f"active: the call fails with a dtype mismatch (expected scalar type "
                f"{'/'.join(n for d, n in ((FP16, 'Half'), ('bf16', 'BFloat16')) if d in module.dtypes)} but found "
                f"Float); cast it to the model's dtype where it leaves the batch"
            )
            self.report(statement, message, confidence=confidence)
            return
        fix = None
        if fixable and isinstance(module_node, (cst.Name, cst.Attribute)):
            target = model_dtype_expression(self.ctx, module_node, module)
            fix = Fix(
                Safety.UNSAFE,
                (suffix_edit(self, arg.value, f".to({target})"),),
                "cast the input to the model's dtype",
            )
        self.report(arg.value, message, confidence=confidence, fix=fix)


@dataclasses.dataclass(frozen=True)
class _Alias:
    cast: cst.Call
    parent_name: str


def _aliasing_cast(ctx, module_node: cst.BaseExpression, origin) -> _Alias | None:
    """``model_fp16 = model.half()`` when ``module_node`` is ``model``: a whole-module cast whose
    result is bound to another name, while the call still uses the cast module's own name."""
    cast = origin.node if origin is not None else None
    if not isinstance(cast, cst.Call) or not isinstance(cast.func, cst.Attribute):
        return None
    if cast.func.attr.value not in ("half", "bfloat16", "to", "type"):
        return None
    receiver = dotted_name(cast.func.value)
    if receiver is None or receiver != dotted_name(module_node):
        return None
    assign = ctx.parent(cast)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target = dotted_name(assign.targets[0].target)
    if target is None or target == receiver:
        return None
    return _Alias(cast, target)


# -- DTL102 -----------------------------------------------------------------------------------
class PartialLowpCast(Rule):
    """## What it does
    Flags three ways a model ends up holding float16/bfloat16 and float32 layers outside autocast:
    a new `torch.nn` layer (a classification head, an adapter) attached to a model *after* the
    whole model was cast to low precision, a cast of one submodule (`model.encoder.half()`)
    of a float32 model that is then called as a whole, with no autocast region around the call,
    and some parameters of a low-precision model upcast by hand (`for p in model.parameters():
    if p.dim() == 1: p.data = p.data.float()`, huggingface/peft#88) before the model is called
    outside autocast. Also a diffusers pipeline loaded with a float16/bfloat16 `torch_dtype`
    that was given a float32 denoiser, controlnet or text encoder (`Pipe.from_pretrained(name,
    transformer=transformer, torch_dtype=torch.float16)` with `transformer` loaded without
    `torch_dtype`) and is called outside autocast: `from_pretrained` casts only the components it
    loads (the fact is catalog data, `PIPELINE_COMPUTE_COMPONENTS` in facts/flow/library.py; a
    float32 VAE is left out, the pipelines cast latents to it themselves, and so is a model
    accelerate prepared, whose forward keeps its autocast wrapper).

    ## Why is this bad?
    The forward pass hands the half-precision activations of one part to the float32 weights of
    the other (or the reverse) and fails with `mat1 and mat2 must have the same dtype, but got
    Half and Float`. Layers created after `model.half()` are float32: `half()` is not sticky.

    ## Example
    ```python
    model = AutoModel.from_pretrained("bert-base-uncased").half()
    model.classifier = nn.Linear(768, 2)
    logits = model(**batch)
    ```

    ## Use instead
    ```python
    model = AutoModel.from_pretrained("bert-base-uncased")
    model.classifier = nn.Linear(768, 2)
    model.half()  # cast after the model is complete, or train under torch.autocast
    ```

    ## Fix safety
    No fix: where the cast belongs depends on how the model is trained.
    """

    code = "DTL102"
    name = "partial-lowp-cast"
    summary = "Part of a model cast to low precision, the rest float32, called outside autocast"
    queries = (
        "the dtype flow: every module cast with the module's value before it, and the dtypes of a model, its parts and a layer attached to it (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the enabled autocast region around a node, as the dtype flow records it (facts/dtypes.py `autocast_at`)",
    )
    # Both paths need a float16/bfloat16 model or submodule (``parent.dtype in LOW``, ``cast.dtypes <= LOW``).
    triggers = LOWP_TRIGGERS
    valid = (
        "import torch\nfrom torch import nn\nmodel = Net()\nmodel.head = nn.Linear(8, 2)\nmodel.half()\nmodel(x)\n",
        "import torch\nfrom torch import nn\nmodel = Net().half()\nmodel.head = nn.Linear(8, 2).half()\nmodel(x)\n",
        "import torch\nfrom torch import nn\nmodel = Net()\nmodel.encoder.half()\nwith torch.autocast('cuda'):\n    model(x)\n",
    )
    invalid = (
        Invalid("import torch\nfrom torch import nn\nmodel = Net().half()\nmodel.head = nn.Linear(8, 2)\nmodel(x)\n"),
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.encoder = nn.Linear(4, 4)\n        self.head = nn.Linear(4, 2)\n    def forward(self, x):\n"
            "        return self.head(self.encoder(x))\nmodel = Net()\nmodel.encoder.half()\nmodel(x)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._calls: dict[str, list[cst.Call]] = {}
        self._heads: list[tuple[cst.Assign, str, Value, Value]] = []
        self._upcasts: list[tuple[cst.Assign, str, Value, cst.If]] = []

    def visit_Call(self, node: cst.Call) -> None:
        module, module_node = callee_module(self.ctx, node)
        key = dotted_name(module_node) if module is not None else None
        if key and self.ctx.flow.autocast_at(node) is None:
            self._calls.setdefault(key, []).append(node)
            if module.keys and isinstance(module.info, str) and module.info.endswith("Pipeline"):
                self._mixed_pipeline(node, key, module)

    def _mixed_pipeline(self, node: cst.Call, key: str, pipeline: Value) -> None:
        """A diffusers pipeline loaded in float16/bfloat16 (``torch_dtype=``) that holds a model
        passed in float32: ``from_pretrained`` casts only what it loads (the interpreter keeps the
        passed models as the pipeline's ``keys``/``items``, library.PIPELINE_COMPUTE_COMPONENTS)."""
        low = next((d for d in (FP16, BF16) if d in pipeline.dtypes), None)
        if low is None or in_named_autocast(self.ctx, node):
            return
        for name, component in zip(pipeline.keys, pipeline.items):
            if component is None or not component.certain or component.dtype != FP32 or component.autocast is not None:
                continue  # a trained model accelerate prepared keeps its autocast forward
            if self._component_cast(name, component, node):
                continue  # ``pipeline.transformer.to(dtype)``, or the passed model cast in place later
            when = "" if pipeline.certain else f" when its `torch_dtype` is {LONG_NAMES[low]}"
            self.report(
                node,
                f"`{key}` is {LONG_NAMES[low]} {pipeline.since(low)}, but its `{name}` is {dtype_phrase(component)}: "
                f"`from_pretrained(torch_dtype=...)` casts only the components it loads, not the ones passed "
                f"in, and no autocast region is active, so{when} the {LONG_NAMES[low]} activations of the rest meet "
                f"float32 weights (`Input type (c10::{'Half' if low == FP16 else 'BFloat16'}) and bias type (float) "
                f"should be the same`); load `{name}` with the same `torch_dtype`, or run the pipeline under "
                f"`torch.autocast`",
                confidence=Confidence.HIGH if pipeline.certain else Confidence.MEDIUM,
            )
            return

    def _component_cast(self, name: str, component: Value, call: cst.Call) -> bool:
        """A module cast written between the component's load and the pipeline call may reach the
        pipeline's ``name`` component: a cast of ``<anything>.name`` or of a model this file
        passes as ``name=`` (a module casts in place, so the pipeline's reference changes too)."""
        first = component.origin.line if component.origin is not None else 0
        last = self.ctx.position(call).start.line
        passed = {name}
        for node in walk(self.ctx.module, into_definitions=True):
            if isinstance(node, cst.Call):
                passed.update(dotted_name(a.value) for a in node.args if a.keyword is not None and a.keyword.value == name)
        return any(cast.dtypes and (cast.target in passed or cast.target.rsplit(".", 1)[-1] == name)
                   and first <= self.ctx.position(cast.node).start.line <= last
                   for cast in self.ctx.flow.module_casts)

    def _selective_upcast(self, node: cst.Assign) -> None:
        """``for p in model.parameters(): if p.dim() == 1: p.data = p.data.float()`` on a low
        precision model: some of its layers (norms, biases) become float32 (peft#88)."""
        target = node.targets[0].target
        if target.attr.value != "data" or not isinstance(target.value, cst.Name):
            return
        new = self.ctx.flow.value_of(node.value)
        if new is None or new.kind != "tensor" or not new.certain or new.dtype != FP32:
            return
        branch = self.ctx.enclosing(node, cst.If, cst.For)
        loop = self.ctx.enclosing(node, cst.For)
        if not isinstance(branch, cst.If) or loop is None or self.ctx.enclosing(branch, cst.For) is not loop:
            return
        iterated = loop.iter
        if not (isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Attribute)
                and iterated.func.attr.value in ("parameters", "named_parameters")):
            return
        model_key = dotted_name(iterated.func.value)
        model = self.ctx.flow.value_of(iterated.func.value)
        if model_key is None or model is None or model.kind != "module" or not model.certain or model.dtype not in LOW:
            return
        self._upcasts.append((node, model_key, model, branch))

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Attribute):
            return
        self._selective_upcast(node)
        target = node.targets[0].target
        parent = self.ctx.flow.value_of(target.value)
        new = self.ctx.flow.value_of(node.value)
        parent_key = dotted_name(target.value)
        if parent is None or new is None or parent_key is None or parent.kind != "module" or new.kind != "module":
            return
        if not (parent.certain and parent.dtype in LOW and new.certain and new.dtype == FP32 and is_torch_layer(new)):
            return
        self._heads.append((node, parent_key, parent, new))

    def leave_Module(self, original_node: cst.Module) -> None:
        flow = self.ctx.flow
        for assign, parent_key, parent, new in self._heads:
            line = self.ctx.position(assign).start.line
            later_casts = [
                c for c in flow.module_casts
                if c.target == parent_key and self.ctx.position(c.node).start.line > line
            ]
            calls = [c for c in self._calls.get(parent_key, ()) if self.ctx.position(c).start.line > line]
            if later_casts:
                continue
            if calls:
                where = f"the forward pass at line {self.ctx.position(calls[0]).start.line}"
            elif self._returned(assign, parent_key):
                where = "its forward pass"
            else:
                continue
            head = code(self.ctx, assign.targets[0].target)
            self.report(
                assign.value,
                f"`{head}` is a new float32 `{new.info.rsplit('.', 1)[-1]}` attached to `{parent_key}`, which is "
                f"{dtype_phrase(parent)}; {where} mixes {LONG_NAMES[parent.dtype]} and float32 outside autocast "
                f"(mat1 and mat2 must have the same dtype). Attach layers before casting the model",
                confidence=Confidence.HIGH,
            )
        for assign, model_key, model, branch in self._upcasts:
            line = self.ctx.position(assign).start.line
            calls = [c for c in self._calls.get(model_key, ()) if self.ctx.position(c).start.line > line]
            if not calls:
                continue
            self.report(
                assign,
                f"this upcasts the parameters of `{model_key}` ({dtype_phrase(model)}) that the `if` at line"
                f" {self.ctx.position(branch).start.line} selects: their layers now compute in float32 and hand float32"
                f" activations to the {LONG_NAMES[model.dtype]} layers around them, and `{model_key}(...)` at line"
                f" {self.ctx.position(calls[0]).start.line} runs outside autocast (expected scalar type Float but found"
                " Half); run the model under autocast, which makes the mixed dtypes meet safely",
                confidence=Confidence.MEDIUM,
            )
        for cast in flow.module_casts:
            if "." not in cast.target or not cast.dtypes or not cast.dtypes <= LOW or cast.target.startswith("self."):
                continue
            parent_key = cast.target.rsplit(".", 1)[0]
            receiver = cast.node.func.value if isinstance(cast.node.func, cst.Attribute) else None
            if not isinstance(receiver, cst.Attribute):
                continue
            parent = flow.value_of(receiver.value)
            if parent is None or parent.kind != "module" or parent.dtype != FP32:
                continue
            if not isinstance(parent.info, str) or "Pipeline" in parent.info or parent.info.startswith("torch.nn"):
                continue
            if forward_casts_inputs(self.ctx, parent):
                continue
            line = self.ctx.position(cast.node).start.line
            calls = [c for c in self._calls.get(parent_key, ()) if self.ctx.position(c).start.line > line]
            whole = [c for c in flow.module_casts if c.target == parent_key and self.ctx.position(c.node).start.line > line]
            if not calls or whole:
                continue
            self.report(
                cast.node,
                f"only `{cast.target}` is cast to {' or '.join(LONG_NAMES[d] for d in sorted(cast.dtypes))}; the rest of "
                f"`{parent_key}` stays float32 and `{parent_key}(...)` at line {self.ctx.position(calls[0]).start.line} "
                f"runs outside autocast, so activations cross a dtype boundary (mat1 and mat2 must have the same dtype)",
                confidence=Confidence.MEDIUM,
            )

    def _returned(self, node: cst.CSTNode, key: str) -> bool:
        """The model built in a helper is returned to a caller that runs it."""
        function = self.ctx.enclosing(node, cst.FunctionDef)
        if function is None:
            return False
        # not into nested functions (classes and lambdas hold no return of this one either way)
        return any(
            type(node) is cst.Return and node.value is not None and dotted_name(node.value) == key
            for node in walk(function)
        )


def part_meets_here(ctx, module_node: cst.BaseExpression, value: Value, dtype: str) -> bool:
    """``value`` has ``dtype`` because one part of the model was given it (``model.backbone.half()``,
    ``nn.Linear(..., dtype=torch.bfloat16)``, a part world of the project), not the module the
    method runs on: the part meets the rest of the model at this ``self.<attr>(...)`` call, where
    the finding belongs (inside the part's own forward, ``self`` is that part: the caller's)."""
    origin = value.origin_of(dtype)
    if origin is None or not origin.part:
        return False
    root = module_node
    while isinstance(root, cst.Attribute):
        root = root.value
    owner = ctx.flow.value_of(root)
    mine = owner.origin_of(dtype) if owner is not None else None
    return mine is None or not (mine is origin or type(mine) is type(origin) and mine.node is origin.node
                                and mine.describe() == origin.describe())


def _in_module_class(ctx, node: cst.CSTNode) -> bool:
    """Inside a method of a class that is not a plain ``object`` (so an nn.Module, whose
    ``self.*`` take the dtype of the instance a caller cast). A function outside any class that
    takes ``self`` (one monkeypatched in as a forward) has no caller here to report at."""
    return ctx.enclosing(node, cst.ClassDef) is not None and not _in_plain_class(ctx, node)


def _in_plain_class(ctx, node: cst.CSTNode) -> bool:
    """Inside a method of a class with no base but ``object``: not an nn.Module (whose attributes
    take the dtype of the instance a caller cast), so its ``self.*`` values are its own."""
    cls = ctx.enclosing(node, cst.ClassDef)
    if cls is None:
        return False
    return all(isinstance(base.value, cst.Name) and base.value.value == "object" for base in cls.bases)


def _runs_in_world(ctx, node: cst.CSTNode, module_node: cst.CSTNode) -> bool:
    """Inside a module class that runs in a precision world of the project pass (cast, or handed
    to DeepSpeed/Lightning, in another file), calling a submodule the class does not keep in
    float32 itself (``self.norm.float()``, ``self.norm.to(torch.float32)``)."""
    worlds = getattr(ctx, "worlds", None)
    cls = ctx.enclosing(node, cst.ClassDef)
    if worlds is None or cls is None:
        return False
    world = worlds.classes.get(cls.name.value)
    if world is None or world.methods:
        return False
    source = ctx.module.code_for_node(cls)
    if "_keep_in_fp32_modules" in source:
        return False  # transformers loads the listed modules in float32 whatever the dtype
    spelled = re.escape(ctx.code_for(module_node))
    kept = re.compile(spelled + r"\s*\.\s*(float\(\s*\)|to\([^)]*float32)")
    return not kept.search(source)


def _root_name(node: cst.CSTNode | None) -> str | None:
    """``self`` for ``self.encoder.layers``; None for anything but a name/attribute chain."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


# -- DTL103 -----------------------------------------------------------------------------------
class AutocastBoundaryLeak(Rule):
    """## What it does
    Flags a float32 layer called, outside autocast or inside an `autocast(enabled=False)` region,
    on a tensor that a linear/conv/matmul produced *inside* an enabled autocast region, so it is
    float16/bfloat16.

    ## Why is this bad?
    Autocast casts inputs only while it is active. Its low-precision outputs keep their dtype
    after the block, and a disabled region does not cast them back, so the float32 layer fails
    with `mat1 and mat2 must have the same dtype, but got BFloat16 and Float`. The autocast docs
    ask disabled regions to cast their inputs with `.float()`.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        features = backbone(images)
        with torch.autocast("cuda", enabled=False):
            logits = head(features)
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        features = backbone(images)
        with torch.autocast("cuda", enabled=False):
            logits = head(features.float())
    ```

    ## Fix safety
    Safe: `.float()` on a float16/bfloat16 tensor is exact, and it is what the float32 layer
    needs.
    """

    code = "DTL103"
    name = "autocast-boundary-leak"
    summary = "Autocast output reaches a float32 layer outside the (enabled) region"
    queries = (
        "the dtype flow: the dtype of the called layer and of its input, and whether that input was produced inside an enabled autocast region (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the autocast regions around the call, including `enabled=False` ones (facts/dtypes.py `autocast_stack_at`)",
    )
    fix_safety = Safety.SAFE
    # The argument must come from an autocast region (``value.autocast``): ``torch.autocast``,
    # ``torch.cuda.amp.autocast``, ``accelerator.autocast()`` all spell the whole word.
    triggers = (exact_word("autocast"),)
    valid = (
        "import torch\nfc = torch.nn.Linear(4, 4)\nhead = torch.nn.Linear(4, 2)\nwith torch.autocast('cuda'):\n    h = fc(x)\n    y = head(h)\n",
        "import torch\nfc = torch.nn.Linear(4, 4)\nhead = torch.nn.Linear(4, 2)\nwith torch.autocast('cuda'):\n    h = fc(x)\nwith torch.autocast('cuda', enabled=False):\n    y = head(h.float())\n",
        "import torch\nfc = torch.nn.Linear(4, 4)\nhead = torch.nn.Linear(4, 2)\nwith torch.autocast('cuda', enabled=False):\n    h = fc(x)\ny = head(h)\n",
    )
    invalid = (
        Invalid(
            "import torch\nfc = torch.nn.Linear(4, 4)\nhead = torch.nn.Linear(4, 2)\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    h = fc(x)\n    with torch.autocast('cuda', enabled=False):\n        y = head(h)\n",
            fixed="import torch\nfc = torch.nn.Linear(4, 4)\nhead = torch.nn.Linear(4, 2)\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    h = fc(x)\n    with torch.autocast('cuda', enabled=False):\n        y = head(h.float())\n",
        ),
        Invalid(
            "import torch\nfc = torch.nn.Linear(4, 4)\nhead = torch.nn.Linear(4, 2)\nwith torch.autocast('cuda'):\n    h = fc(x)\ny = head(h)\n",
            fixed="import torch\nfc = torch.nn.Linear(4, 4)\nhead = torch.nn.Linear(4, 2)\nwith torch.autocast('cuda'):\n    h = fc(x)\ny = head(h.float())\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        flow = self.ctx.flow
        module, module_node = callee_module(self.ctx, node)
        if module is None or module.dtype != FP32 or is_loss_module(module) or flow.autocast_at(node) is not None:
            return
        if not is_torch_layer(module) and not (isinstance(module.info, str) and "." not in module.info):
            return
        if forward_casts_inputs(self.ctx, module):
            return
        stack = flow.autocast_stack_at(node)
        where = "inside `autocast(enabled=False)`" if stack else "after the autocast block"
        for arg in arguments(node):
            if arg.star:
                continue
            value = flow.value_of(arg.value)
            if value is None or value.kind != "tensor" or value.autocast not in ("fp16", "bf16"):
                continue
            if not value.dtypes <= LOW:
                continue
            if value.certain:
                confidence = Confidence.HIGH if is_torch_layer(module) else Confidence.MEDIUM
            else:
                confidence = Confidence.LOW
            name = code(self.ctx, module_node)
            argument = code(self.ctx, arg.value)
            self.report(
                arg.value,
                f"`{argument}` was produced under autocast as {LONG_NAMES[value.autocast]}"
                f"{' ' + value.since() if value.since() else ''}; `{name}` has float32 weights and runs {where}, "
                f"where nothing casts its input: mat1 and mat2 must have the same dtype. Cast with `.float()`",
                confidence=confidence,
                fix=Fix(Safety.SAFE, (suffix_edit(self, arg.value, ".float()"),), "cast to float32"),
            )
            return


# -- DTL104 -----------------------------------------------------------------------------------
# method -> position of the source tensor argument (after self) and its keyword.
INDEX_METHODS = {
    "index_add_": (2, "source"), "index_add": (2, "source"),
    "index_copy_": (2, "source"), "index_copy": (2, "source"),
    "scatter_": (2, "src"), "scatter": (2, "src"),
    "scatter_add_": (2, "src"), "scatter_add": (2, "src"),
    "scatter_reduce_": (2, "src"), "scatter_reduce": (2, "src"),
    "index_put_": (1, "values"), "index_put": (1, "values"),
    "masked_scatter_": (1, "source"), "masked_scatter": (1, "source"),
}


class IndexOpDtype(Rule):
    """## What it does
    Flags `index_add_`, `index_copy_`, `scatter_`/`scatter_add_`/`scatter_reduce_`,
    `index_put_`, `masked_scatter_` and advanced-index assignment (`dest[mask] = src`,
    `dest[idx] = src` with a tensor index or a list of integers, `dest[[0, 2], :, 1] = src`) where the destination and the source tensors are known
    to have different floating dtypes (typically a float16 buffer and a float32 update).

    ## Why is this bad?
    These ops never promote: they fail with `index_add_(): self (Half) and source (Float) must
    have the same scalar type`, `scatter(): Expected self.dtype to be equal to src.dtype` or
    `Index put requires the source and destination dtypes match`. Plain slicing (`dest[0] = src`)
    casts silently; tensor indices do not.

    ## Example
    ```python
    memory = torch.zeros(n, d, dtype=torch.float16)
    update = torch.randn(k, d)
    memory.index_add_(0, idx, update)
    ```

    ## Use instead
    ```python
    memory.index_add_(0, idx, update.to(memory.dtype))
    ```

    ## Fix safety
    Safe: the destination stores the values in its own dtype anyway; casting the source first is
    what a dtype-agnostic copy does.
    """

    code = "DTL104"
    name = "index-op-dtype"
    summary = "Index/scatter op with destination and source of different dtypes"
    queries = (
        "the dtype flow: the dtypes of the destination and the source tensor (facts/dtypes.py, computed by facts/flow/interpreter.py)",
    )
    fix_safety = Safety.SAFE
    # Destination and source must have two different float dtypes, so one is float16, bfloat16 or
    # float64 (a float64 from NumPy becomes a tensor only through ``torch.*``, hence the group).
    triggers = LOWP_TRIGGERS + FP64_SPELLED + NUMPY_FP64
    required_triggers = (LOWP_TRIGGERS + FP64_SPELLED + (TORCH,),)
    valid = (
        "import torch\nm = torch.zeros(4, 2, dtype=torch.float16)\nm.index_add_(0, idx, torch.ones(1, 2).half())\n",
        "import torch\nm = torch.zeros(4, dtype=torch.float16)\nm[0] = torch.ones(())\n",
        "import torch\nm = torch.zeros(4, dtype=torch.float16)\nm.scatter_(0, idx, 1.0)\n",
    )
    invalid = (
        Invalid(
            "import torch\nmemory = torch.zeros(4, 2, dtype=torch.float16)\nupdate = torch.randn(1, 2)\nmemory.index_add_(0, idx, update)\n",
            fixed="import torch\nmemory = torch.zeros(4, 2, dtype=torch.float16)\nupdate = torch.randn(1, 2)\nmemory.index_add_(0, idx, update.to(memory.dtype))\n",
        ),
        Invalid(
            "import torch\ngrid = torch.zeros(3, 3, 3)\nvalue = torch.tensor(5, dtype=torch.float64)\ngrid[[0, 1, 2], :, 1] = value\n",
            fixed="import torch\ngrid = torch.zeros(3, 3, 3)\nvalue = torch.tensor(5, dtype=torch.float64)\ngrid[[0, 1, 2], :, 1] = value.to(grid.dtype)\n",
        ),
        Invalid(
            "import torch\nscores = torch.zeros(8).half()\nmask = scores > 0\nscores[mask] = torch.rand(3)\n",
            fixed="import torch\nscores = torch.zeros(8).half()\nmask = scores > 0\nscores[mask] = torch.rand(3).to(scores.dtype)\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Attribute) or node.func.attr.value not in INDEX_METHODS:
            return
        position, keyword = INDEX_METHODS[node.func.attr.value]
        source = None
        positional = 0
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                source = arg.value
            elif arg.keyword is None and not arg.star:
                if positional == position:
                    source = arg.value
                positional += 1
        if source is not None:
            self._check(node.func.value, source, node.func.attr.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            subscript = target.target
            if not isinstance(subscript, cst.Subscript):
                continue
            indexed_by_tensor = False
            for element in subscript.slice:
                if isinstance(element.slice, cst.Index):
                    if _int_list(element.slice.value):
                        indexed_by_tensor = True  # ``x[[0, 2], :, 1] = src``: advanced indexing too
                        continue
                    index = self.ctx.flow.value_of(element.slice.value)
                    if index is not None and index.kind == "tensor" and index.dtypes & {INT, BOOL}:
                        indexed_by_tensor = True
                    elif index is not None and index.kind == "tuple" and index.info == "list":
                        indexed_by_tensor = True  # a name bound to a list (a caller's ``[0, 1, 2]``)
            if indexed_by_tensor:
                self._check(subscript.value, node.value, "index assignment")

    def _check(self, dest_node, source_node, op: str) -> None:
        flow = self.ctx.flow
        dest = flow.value_of(dest_node)
        source = flow.value_of(source_node)
        if dest is None or source is None or dest.kind != "tensor" or source.kind != "tensor":
            return
        floats = {FP32, "fp16", "bf16", FP64}
        if not dest.dtypes or not source.dtypes or not (dest.dtypes | source.dtypes) <= floats:
            return
        if dest.certain and source.certain:
            if dest.dtype == source.dtype:
                return
            confidence = Confidence.HIGH
        elif (dest.certain and dest.dtype not in source.dtypes and not source.partial) or (
            source.certain and source.dtype not in dest.dtypes and not dest.partial
        ):
            confidence = Confidence.HIGH
        elif dest.certain or source.certain:
            if dest.dtypes == source.dtypes:
                return
            # "float32 or float64" joined from a helper's return over all its callers is a guess
            # about this call (issue 14, cause 2): low.
            uncertain = source if dest.certain else dest
            confidence = Confidence.LOW if from_elsewhere(self.ctx, dest_node, uncertain) else Confidence.MEDIUM
        else:
            return
        fix = None
        if isinstance(dest_node, (cst.Name, cst.Attribute)):
            fix = Fix(
                Safety.SAFE,
                (suffix_edit(self, source_node, f".to({self.ctx.code_for(dest_node)}.dtype)"),),
                "cast the source to the destination's dtype",
            )
        self.report(
            source_node,
            f"`{code(self.ctx, dest_node)}` is {dtype_phrase(dest)} but the source `{code(self.ctx, source_node)}` is "
            f"{dtype_phrase(source)}; {op} does not promote and fails (source and destination dtypes must match)",
            confidence=confidence,
            fix=fix,
        )


def from_elsewhere(ctx, node: cst.CSTNode, value: Value) -> bool:
    """Some dtype of ``value`` was set outside the function ``node`` is in (it came back from
    another function's return, joined over every call of it)."""
    function = ctx.enclosing(node, cst.FunctionDef)
    if function is None:
        return False
    start, end = ctx.position(function).start.line, ctx.position(function).end.line
    return any(origin is not None and not start <= origin.line <= end for _, origin in value.origins)


def _int_list(node: cst.BaseExpression) -> bool:
    """A list literal of integers (``[0, 2, 1]``), which indexes like a tensor of indices."""
    return isinstance(node, cst.List) and bool(node.elements) and all(
        isinstance(e, cst.Element) and isinstance(e.value, cst.Integer) for e in node.elements
    )


# -- DTL105 -----------------------------------------------------------------------------------
class NumpyFloat64Leak(Rule):
    """## What it does
    Flags a float64 tensor that came from NumPy (`torch.from_numpy(np.random.randn(...))`,
    `torch.tensor(np.linspace(...))`; audio from `soundfile.read`, float64 unless `dtype=` is
    given, also through scipy's resamplers) passed to a float32/half module, to a loss together with a
    float32 tensor, to a matmul, linear or convolution (`torch.mm`, `@`, `F.linear`, `F.conv2d`)
    together with a tensor of another float dtype, or given to a loss as its class weights
    (`nn.CrossEntropyLoss(weight=torch.from_numpy(np.bincount(y) / len(y)))`, `pos_weight=`,
    and the `weight=` of a functional loss such as `F.cross_entropy`, whose logits a model of
    the file does not make float64).
    Batches of a `DataLoader` over a Dataset class of the file carry what its `__getitem__`
    returns (the default collate keeps a NumPy array's float64), or what its `collate_fn` (a
    function of the file) returns, and a helper's result carries
    its float64 to the caller, in this file or, in a project check, in another one
    (`torch.from_numpy(np.stack(...))` returned by `dataset.py`, scikit-learn class weights
    passed to a head's constructor). The finding is where the NumPy data becomes a tensor
    (`torch.from_numpy`, `torch.tensor`, `torch.as_tensor`) when that is in the file, since that
    is the line to change, once per conversion, the message naming the line where the float64
    tensor fails; else at that line (a batch of a `DataLoader`, a helper of another file). A
    loss given float64 class weights built elsewhere is reported where it is called, where it
    raises; a loss this file never calls, at its `weight=`. A tensor that is float64 from NumPy
    on one path of the program's own branches and float32 on the others (a loader that converts
    the array only when it resamples, openai/whisper#2831) is reported where it reaches a float32
    module, at medium confidence.

    ## Why is this bad?
    NumPy's default float is float64, and `from_numpy`/`torch.tensor` keep it. A float32 layer
    then fails with `mat1 and mat2 must have the same dtype, but got Double and Float`, `torch.mm`
    with `expected m1 and m2 to have the same dtype, but got: double != float`, and a loss whose
    weights are float64 with `expected scalar type Float but found Double` on float32 logits; a
    loss given a float64 target silently promotes to float64 (slow, and the gradient dtype no
    longer matches the model). Class weights from `np.bincount(...) / n` or scikit-learn's
    `compute_class_weight` are float64 (deepset-ai/FARM#758).

    ## Example
    ```python
    x = torch.from_numpy(np.random.randn(16, 8))
    y = model(x)
    ```

    ## Use instead
    ```python
    x = torch.from_numpy(np.random.randn(16, 8).astype(np.float32))
    y = model(x)
    ```

    ## Fix safety
    Unsafe: the fix appends `.float()` where the data becomes a tensor (or, for a tensor made
    elsewhere, at the call), which drops float64 precision.
    """

    code = "DTL105"
    name = "numpy-float64-leak"
    summary = "NumPy float64 data reaches a float32 model or loss"
    queries = (
        "the dtype flow: a float64 value with its NumPy origin and the conversion that made it a tensor, DataLoader batches included, and the dtype of the module, loss or operand it reaches (facts/dtypes.py, computed by facts/flow/interpreter.py; batches by facts/flow/loaders.py)",
        "the enabled autocast region around a node, as the dtype flow records it (facts/dtypes.py `autocast_at`)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "in a project check, the precision world the project pass found for the enclosing module class (facts/flow/seeding.py)",
    )
    fix_safety = Safety.UNSAFE
    # The float64 must come from a NumPy array (``_from_numpy``): a NumPy factory or ``.astype``,
    # turned into a tensor by a ``torch.*`` function.
    triggers = NUMPY_FP64
    required_triggers = ((TORCH,),)
    valid = (
        "import numpy as np\nimport torch\nmodel = torch.nn.Linear(8, 2)\nx = torch.from_numpy(np.random.randn(4, 8).astype(np.float32))\nmodel(x)\n",
        "import numpy as np\nimport torch\nmodel = torch.nn.Linear(8, 2).double()\nx = torch.from_numpy(np.random.randn(4, 8))\nmodel(x)\n",
        "import numpy as np\nimport torch\nmodel = torch.nn.Linear(8, 2)\nx = torch.tensor(np.random.randn(4, 8), dtype=torch.float32)\nmodel(x)\n",
    )
    invalid = (
        Invalid(
            "import numpy as np\nimport torch\nmodel = torch.nn.Linear(8, 2)\nx = torch.from_numpy(np.random.randn(4, 8))\nmodel(x)\n",
            fixed="import numpy as np\nimport torch\nmodel = torch.nn.Linear(8, 2)\nx = torch.from_numpy(np.random.randn(4, 8)).float()\nmodel(x)\n",
        ),
        Invalid(
            "import numpy as np\nimport torch\nimport torch.nn.functional as F\npred = torch.randn(4, requires_grad=True)\ntarget = torch.tensor(np.linspace(0, 1, 4))\nloss = F.mse_loss(pred, target)\n",
        ),
        Invalid(
            "import numpy as np\nimport torch\nfeatures = torch.from_numpy(np.random.normal(0, 1, (100, 2)))\nw = torch.zeros(2, 1)\ny = torch.mm(features, w)\n",
        ),
        Invalid(
            "import numpy as np\nimport torch\ncounts = np.bincount(labels)\ncriterion = torch.nn.CrossEntropyLoss(weight=torch.from_numpy(counts.sum() / counts))\n",
        ),
        Invalid(
            "import numpy as np\nimport torch\nweights = np.array([1.0, 2.0, 0.5])\ncriterion = torch.nn.CrossEntropyLoss(weight=torch.tensor(weights))\n",
            fixed="import numpy as np\nimport torch\nweights = np.array([1.0, 2.0, 0.5])\ncriterion = torch.nn.CrossEntropyLoss(weight=torch.tensor(weights).float())\n",
        ),
        Invalid(
            "import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\nclass Rows(Dataset):\n"
            "    def __getitem__(self, i):\n        return np.random.normal(0, 1, 4)\nmodel = torch.nn.Linear(4, 1)\n"
            "for x in DataLoader(Rows(), batch_size=8):\n    model(x)\n",
            fixed="import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\nclass Rows(Dataset):\n"
            "    def __getitem__(self, i):\n        return np.random.normal(0, 1, 4)\nmodel = torch.nn.Linear(4, 1)\n"
            "for x in DataLoader(Rows(), batch_size=8):\n    model(x.float())\n",
        ),
    )

    def _from_numpy(self, value: Value) -> bool:
        return from_numpy(self.ctx, value)

    def _leak_on_a_path(self, value: Value | None) -> bool:
        """float64 from NumPy on some paths, float32 on the others, none unknown."""
        return value is not None and value.kind == "tensor" and not value.partial and FP64 in value.dtypes \
            and value.dtypes <= {FP32, FP64} and self._from_numpy(value)

    def _leak(self, node: cst.BaseExpression) -> Value | None:
        value = self.ctx.flow.value_of(node)
        if value is not None and value.kind == "tensor" and value.dtype == FP64 and self._from_numpy(value):
            return value
        return None

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._check_operands(node)

    def _check_operands(self, node: cst.CSTNode) -> bool:
        """A NumPy float64 operand of a matmul/linear/conv that meets another float dtype."""
        found = matmul_operands(self.ctx, node)
        if found is None:
            return False
        op, operands = found
        values = [(n, self.ctx.flow.value_of(n)) for n in operands]
        leak = next(((n, v) for n, v in values if self._leak(n) is not None), None)
        others = [
            (n, v) for n, v in values
            if v is not None and v.kind == "tensor" and v.certain and v.dtype in (FP32, FP16, "bf16")
        ]
        if leak is None or not others:
            return True
        (leak_node, value), (other_node, other) = leak, others[0]
        self._report_leak(
            leak_node, value,
            f"`{code(self.ctx, leak_node)}` is float64 ({value.since(FP64).replace('since ', 'from NumPy at ')}) "
            f"and meets `{code(self.ctx, other_node)}`, {dtype_phrase(other)}, in `{op}`, which does not promote: "
            f"expected m1 and m2 to have the same dtype, but got: double != "
            f"{'float' if other.dtype == FP32 else 'c10::Half' if other.dtype == FP16 else 'c10::BFloat16'}; "
            f"convert the array with `.astype(np.float32)`",
            confidence=Confidence.HIGH if self.ctx.flow.autocast_at(node) is None else Confidence.MEDIUM,
        )
        return True

    def visit_Module(self, node: cst.Module) -> None:
        self._weights: list[tuple[cst.Arg, Value, str]] = []  # float64 class weights given to a loss
        self._loss_calls: list[tuple[cst.Call, cst.BaseExpression, Value]] = []  # calls of such a loss
        self._entries: set[int] = set()  # conversions already reported

    def _report_leak(self, use: cst.CSTNode, value: Value, message: str, *, confidence: Confidence,
                     fix: Fix | None = None) -> None:
        """Where the float64 NumPy data became a tensor when that is in this file (the line the fix
        changes: ``torch.from_numpy(a.astype(np.float32))``), once per conversion, naming the use;
        else at the use."""
        entry = value.origin_of(FP64)
        if not isinstance(entry, EntryOrigin):
            self.report(use, message, confidence=confidence, fix=fix)
            return
        if id(entry.entry) in self._entries:
            return
        self._entries.add(id(entry.entry))
        line = self.ctx.position(use).start.line
        parent = self.ctx.parent(entry.entry)
        recast = isinstance(parent, cst.Attribute) and parent.attr.value in ("double", "to", "type")
        self.report(
            entry.entry,
            f"`{code(self.ctx, entry.entry)}` makes a float64 tensor of NumPy data that reaches line {line}: {message}",
            confidence=confidence,
            # (not when a cast follows: ``torch.from_numpy(a).double()`` would undo ``.float()``)
            fix=None if recast else Fix(Safety.UNSAFE, (suffix_edit(self, entry.entry, ".float()"),),
                                        "convert to float32 where it enters"),
        )

    def _check_loss_weight(self, node: cst.Call) -> bool:
        """``nn.CrossEntropyLoss(weight=<NumPy float64>)``: the loss fails on float logits."""
        name = self.ctx.names.qualified_names(node.func)
        if not any(q.startswith("torch.nn.") and LOSS_CLASS.search(q) for q in name):
            return False
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in ("weight", "pos_weight"):
                value = self._leak(arg.value)
                if value is not None:
                    loss = next(q for q in name if LOSS_CLASS.search(q)).rsplit(".", 1)[-1]
                    self._weights.append((arg, value, loss))
        return True

    def leave_Module(self, original_node: cst.Module) -> None:
        """A loss built with float64 class weights is reported where it is called (there it
        raises), naming where the weights come from; one never called here, at its ``weight=``."""
        called = set()
        for call, loss_node, weight in self._loss_calls:
            origin = weight.origin_of(FP64)
            called.add(id(origin))
            given = next((item for item in self._weights if item[1].origin_of(FP64) is origin), None)
            where = f" at line {self.ctx.position(given[0]).start.line}" if given is not None else ""
            fix = None
            if given is not None:
                fix = Fix(Safety.UNSAFE, (suffix_edit(self, given[0].value, ".float()"),), "cast the weights to float32")
            self._report_leak(
                call, weight,
                f"`{code(self.ctx, loss_node)}` was given float64 class weights{where} "
                f"({weight.since(FP64).replace('since ', 'from NumPy at ')}): calling it on float32 (or half) logits "
                f"fails with 'expected scalar type Float but found Double'; build the weights with "
                f"`dtype=torch.float32` (or `.float()`)",
                confidence=Confidence.MEDIUM,
                fix=fix,
            )
        for arg, value, loss in self._weights:
            if id(value.origin_of(FP64)) in called:
                continue
            self._report_leak(
                arg.value, value,
                f"the class weights `{code(self.ctx, arg.value)}` are float64 "
                f"({value.since(FP64).replace('since ', 'from NumPy at ')}): `{loss}` on float32 (or half) "
                f"logits fails with 'expected scalar type Float but found Double'; build them with "
                f"`dtype=torch.float32` (or `.float()`)",
                confidence=Confidence.MEDIUM,
                fix=Fix(Safety.UNSAFE, (suffix_edit(self, arg.value, ".float()"),), "cast the weights to float32"),
            )

    def visit_Call(self, node: cst.Call) -> None:
        if self._check_operands(node) or self._check_loss_weight(node):
            return
        flow = self.ctx.flow
        module, module_node = callee_module(self.ctx, node)
        if module is not None and is_loss_module(module) and module.element is not None:
            weight = module.element
            if weight.kind == "tensor" and weight.dtype == FP64 and self._from_numpy(weight):
                self._loss_calls.append((node, module_node, weight))
        loss = loss_name(self.ctx, node)
        values = [(arg, flow.value_of(arg.value)) for arg in arguments(node) if not arg.star]
        leaks = [(arg, v) for arg, v in values if v is not None and v.kind == "tensor" and v.dtype == FP64 and self._from_numpy(v)]
        if not leaks and loss is None:
            # float64 on one path of the program's own branches, float32 on the others (a helper
            # that converts the array in one branch only): the module call fails on that path
            leaks = [(arg, v) for arg, v in values if self._leak_on_a_path(v)]
        if not leaks:
            return
        arg, value = leaks[0]
        argument = code(self.ctx, arg.value)
        if loss is not None:
            others = [
                v for a, v in values
                if v is not None and v.kind == "tensor" and (v.dtypes and v.dtypes <= {FP32, FP16, "bf16"}
                                                             or not v.dtypes and v.autocast)  # autocast: never float64
            ]
            weight = arg.keyword is not None and arg.keyword.value in ("weight", "pos_weight")
            if not others and weight and not any(
                    v is not None and FP64 in v.dtypes for a, v in values if a is not arg):
                # ``F.cross_entropy(logits, y, weight=w)``: the class weights must have the logits'
                # dtype, and a model's logits are not float64 unless the file made it so
                self._report_leak(
                    arg.value, value,
                    f"the class weights `{argument}` are float64 ({value.since(FP64).replace('since ', 'from NumPy at ')}):"
                    f" `{loss}` on float32 (or half) logits fails with 'expected scalar type Float but found Double';"
                    " build them with `dtype=torch.float32` (or `.float()`)",
                    confidence=Confidence.MEDIUM,
                    fix=Fix(Safety.UNSAFE, (suffix_edit(self, arg.value, ".float()"),), "cast the weights to float32"),
                )
                return
            if not others:
                return
            if arg.keyword is not None and arg.keyword.value in ("weight", "pos_weight"):
                self._report_leak(
                    arg.value, value,
                    f"the class weights `{argument}` are float64 "
                    f"({value.since(FP64).replace('since ', 'from NumPy at ')}): `{loss}` on "
                    f"{others[0].describe() if others[0].dtypes else 'autocast'} logits fails with 'expected scalar "
                    f"type Float but found Double'; build them with `dtype=torch.float32` (or `.float()`)",
                    confidence=Confidence.MEDIUM,
                )
                return
            self._report_leak(
                arg.value, value,
                f"`{argument}` is float64 ({value.since(FP64).replace('since ', 'from NumPy at ')}) and meets a "
                f"{others[0].describe()} tensor in `{loss}`: the loss is silently computed in float64 "
                f"(or fails in backward); convert the array with `.astype(np.float32)`",
                confidence=Confidence.MEDIUM,
            )
            return
        # a module float32 on the paths the flow knows (a parameter annotated with a module class
        # of this file, made in float32 unless a caller casts it) fails as surely as a certain one,
        # unless a caller made it float64: medium.
        if module is None or is_loss_module(module) or len(module.dtypes) != 1 or FP64 in module.dtypes:
            return
        if forward_casts_inputs(self.ctx, module):
            return
        if _root_name(module_node) == "self" and _in_module_class(self.ctx, node) \
                and not _runs_in_world(self.ctx, node, module_node):
            return  # ``self.fc(x)`` in a forward the flow ran for ``model(x)``: reported at that call
        (dtype,) = module.dtypes
        if not value.certain and dtype != FP32:
            return
        fix = None
        if dtype == FP32:
            fix = Fix(Safety.UNSAFE, (suffix_edit(self, arg.value, ".float()"),), "cast to float32")
        if not LowpModelFp32Input._own_or_torch(module) and module.info:
            confidence = Confidence.LOW
        elif not module.certain or not value.certain:
            confidence = Confidence.MEDIUM
        else:
            confidence = Confidence.HIGH if LowpModelFp32Input._own_or_torch(module) else Confidence.MEDIUM
        where = "" if value.certain else " on one of its paths (float32 on the others)"
        self._report_leak(
            arg.value, value,
            f"`{argument}` is float64{where} ({value.since(FP64).replace('since ', 'from NumPy at ')}) but "
            f"`{code(self.ctx, module_node)}` is {dtype_phrase(module)}: mat1 and mat2 must have the same dtype, "
            f"but got Double and {'Float' if dtype == FP32 else 'Half' if dtype == FP16 else 'BFloat16'}",
            confidence=confidence,
            fix=fix,
        )


# -- DTL106 -----------------------------------------------------------------------------------
class IntBoolDtype(Rule):
    """## What it does
    Flags ops that need an integer, boolean or floating tensor and get one the dtype flow knows
    is of the wrong category: float targets for `nll_loss`/`NLLLoss`, float inputs to `one_hot`
    or an `nn.Embedding`, non-bool masks for `masked_fill`, float tensors used as indices,
    `.mean()` of an integer or boolean tensor (`(preds == labels).mean()`), integer targets for
    `binary_cross_entropy(_with_logits)`/`BCELoss`, and `requires_grad=True` on integer tensors.

    ## Why is this bad?
    Each fails at run time: `expected target dtype to be Long or Byte, but got Float`,
    `one_hot is only applicable to index tensor of type LongTensor`, `masked_fill_ only supports
    boolean masks`, `tensors used as indices must be long, int, byte or bool tensors`,
    `mean(): could not infer output dtype`, `result type Float can't be cast to the desired
    output type Long`, `Only Tensors of floating point and complex dtype can require gradients`.

    ## Example
    ```python
    accuracy = (logits.argmax(-1) == labels).mean()
    loss = F.binary_cross_entropy_with_logits(logits, labels)  # labels: int64
    ```

    ## Use instead
    ```python
    accuracy = (logits.argmax(-1) == labels).float().mean()
    loss = F.binary_cross_entropy_with_logits(logits, labels.float())
    ```

    ## Fix safety
    Unsafe: the fix inserts `.float()`, `.long()` or `.bool()`; `.long()` truncates fractional
    indices and `.bool()` treats every non-zero value as True.
    """

    code = "DTL106"
    name = "int-bool-dtype"
    summary = "Op given an int/bool/float tensor of the wrong category"
    queries = (
        "the dtype flow: whether a tensor is integer, boolean or floating (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    fix_safety = Safety.UNSAFE
    # Tensors known to the flow mostly come from ``torch.*``; ``.mean()`` and ``masked_fill`` are also
    # flagged on tensors made without torch (``(logits.argmax(-1) == labels).mean()`` in a helper).
    # Not strictly necessary for a float index (``x[idx.float()]``) in a file without the word torch.
    triggers = ("torch", exact_word("mean"), "masked_fill")
    valid = (
        "import torch\nacc = (torch.randn(4, 3).argmax(-1) == torch.randint(0, 3, (4,))).float().mean()\n",
        "import torch\nimport torch.nn.functional as F\nloss = F.binary_cross_entropy_with_logits(torch.randn(4), torch.randint(0, 2, (4,)).float())\n",
        "import torch\nscores = torch.randn(4, 4)\nmask = scores > 0\nscores = scores.masked_fill(mask, 0.0)\n",
    )
    invalid = (
        Invalid(
            "import torch\npreds = torch.randn(4, 3).argmax(-1)\nlabels = torch.randint(0, 3, (4,))\nacc = (preds == labels).mean()\n",
            fixed="import torch\npreds = torch.randn(4, 3).argmax(-1)\nlabels = torch.randint(0, 3, (4,))\nacc = (preds == labels).float().mean()\n",
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nlabels = torch.randint(0, 2, (4,))\nloss = F.binary_cross_entropy_with_logits(torch.randn(4), labels)\n",
            fixed="import torch\nimport torch.nn.functional as F\nlabels = torch.randint(0, 2, (4,))\nloss = F.binary_cross_entropy_with_logits(torch.randn(4), labels.float())\n",
        ),
        Invalid(
            "import torch\nids = torch.randint(0, 5, (3,), requires_grad=True)\n",
        ),
    )

    def _value(self, node) -> Value | None:
        value = self.ctx.flow.value_of(node)
        return value if value is not None and value.kind == "tensor" and value.certain else None

    def _fix(self, node, suffix: str) -> Fix:
        return Fix(Safety.UNSAFE, (suffix_edit(self, node, suffix),), f"insert `{suffix}`")

    def visit_Call(self, node: cst.Call) -> None:
        flow = self.ctx.flow
        func = node.func
        qualified = self.ctx.names.qualified_names(func)
        short = {q.rpartition(".")[2] for q in qualified if q.startswith("torch")}
        args = [a for a in arguments(node) if not a.star]
        positional = [a for a in args if a.keyword is None]

        def arg(keyword: str, index: int):
            for a in args:
                if a.keyword is not None and a.keyword.value == keyword:
                    return a.value
            return positional[index].value if index < len(positional) else None

        # .mean() of an int/bool tensor
        if isinstance(func, cst.Attribute) and func.attr.value == "mean" and not node.args:
            value = self._value(func.value)
            if value is not None and value.dtype in (INT, BOOL):
                self.report(
                    func.value,
                    f"`{code(self.ctx, func.value)}` is {dtype_phrase(value)}: mean(): could not infer output dtype "
                    f"(input must be floating point); use `.float().mean()`",
                    fix=self._fix(func.value, ".float()"),
                )
            return
        loss = loss_name(self.ctx, node)
        if loss in ("nll_loss", "NLLLoss"):
            target = arg("target", 1)
            value = self._value(target) if target is not None else None
            if value is not None and value.dtype in (FP32, FP16, "bf16", FP64):
                self.report(
                    target,
                    f"the target `{code(self.ctx, target)}` of `{loss}` is {dtype_phrase(value)}: expected target dtype "
                    f"to be Long or Byte, but got Float; pass class indices with `.long()`",
                    fix=self._fix(target, ".long()"),
                )
            return
        if loss in ("binary_cross_entropy", "binary_cross_entropy_with_logits", "BCELoss", "BCEWithLogitsLoss"):
            target = arg("target", 1)
            value = self._value(target) if target is not None else None
            if value is not None and value.dtype in (INT, BOOL):
                self.report(
                    target,
                    f"the target `{code(self.ctx, target)}` of `{loss}` is {dtype_phrase(value)}: BCE needs a floating "
                    f"target (result type Float can't be cast to the desired output type Long); use `.float()`",
                    fix=self._fix(target, ".float()"),
                )
            return
        if "one_hot" in short:
            tensor = arg("tensor", 0)
            value = self._value(tensor) if tensor is not None else None
            if value is not None and value.dtype in (FP32, FP16, "bf16", FP64, BOOL):
                self.report(
                    tensor,
                    f"`{code(self.ctx, tensor)}` is {dtype_phrase(value)}: one_hot is only applicable to index tensor "
                    f"of type LongTensor; use `.long()`",
                    fix=self._fix(tensor, ".long()"),
                )
            return
        if isinstance(func, cst.Attribute) and func.attr.value in ("masked_fill", "masked_fill_") and positional:
            mask = arg("mask", 0)
            value = self._value(mask) if mask is not None else None
            receiver = flow.value_of(func.value)
            if value is not None and value.dtype in (INT, FP32, FP16, "bf16", FP64) and receiver is not None and receiver.kind == "tensor":
                self.report(
                    mask,
                    f"the mask `{code(self.ctx, mask)}` is {dtype_phrase(value)}: masked_fill only supports boolean "
                    f"masks; use `.bool()` (or compare, e.g. `mask == 0`)",
                    fix=self._fix(mask, ".bool()"),
                )
            return
        module, module_node = callee_module(self.ctx, node)
        if module is not None and isinstance(module.info, str) and module.info.endswith(".Embedding") and positional:
            value = self._value(positional[0].value)
            if value is not None and value.dtype in (FP32, FP16, "bf16", FP64):
                self.report(
                    positional[0].value,
                    f"`{code(self.ctx, positional[0].value)}` is {dtype_phrase(value)} but `{code(self.ctx, module_node)}` "
                    f"is an nn.Embedding: indices must be Long or Int; use `.long()`",
                    fix=self._fix(positional[0].value, ".long()"),
                )
            return
        for a in args:
            if a.keyword is not None and a.keyword.value == "requires_grad" and isinstance(a.value, cst.Name) and a.value.value == "True":
                value = self._value(node)
                if value is not None and value.dtype in (INT, BOOL):
                    self.report(
                        a,
                        f"this tensor is {dtype_phrase(value)}: Only Tensors of floating point and complex dtype can "
                        f"require gradients",
                    )
                return

    def visit_Subscript(self, node: cst.Subscript) -> None:
        base = self.ctx.flow.value_of(node.value)
        if base is None or base.kind != "tensor":
            return
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                index = self._value(element.slice.value)
                if index is not None and index.dtype in (FP32, FP16, "bf16", FP64):
                    target = element.slice.value
                    self.report(
                        target,
                        f"`{code(self.ctx, target)}` is {dtype_phrase(index)}: tensors used as indices must be long, "
                        f"int, byte or bool tensors; use `.long()`",
                        fix=self._fix(target, ".long()"),
                    )

"""Dtype through a parameter: DTL510 dtype-agnostic-factory.

DTL508 reports a default-dtype factory meeting a tensor the flow knows is float16/bfloat16. In
library code the other tensor is usually a parameter whose dtype nobody in the file sets; this
rule reports that shape only with a file-local sign that float16 reaches it: arithmetic in the
`forward` of an `nn.Module` in a file that itself runs something in low precision. Without that
sign the finding was a guess (low confidence, not reported: 0 true of 7 sampled on unseen
repositories, integer attention masks padded with float ones, benchmarks/LOWCONF-TRIAGE.tsv).
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.flow.values import FP32
from dtype_lint.facts.followed import cast_afterwards, condition, followed_low
from dtype_lint.facts.lowp_spelled import runs_low_precision
from dtype_lint.facts.lowp_classes import (
    class_lowp_evidence,
    constructor_attributes,
    floating_parameter,
    low_construction,
    mirrors_device,
)
from dtype_lint.facts.sibling_casts import uncast_sibling
from dtype_lint.facts.wrapped_modules import wrapped_parameter
from dtype_lint.facts.numerics import autocast_enabled_at, call_shape
from dtype_lint.facts.training import walk
from dtype_lint.findings import Confidence, Edit, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid
from dtype_lint.rules.numerics_ops import FACTORIES, CombiningRule, _is_float_literal

# Attributes only a tensor has: a parameter read this way is a tensor, not a scalar option.
_TENSOR_ATTRIBUTES = frozenset({"shape", "device", "dtype", "size", "ndim", "dim", "new_zeros", "new_ones", "unsqueeze", "view", "reshape"})


class DtypeAgnosticFactory(CombiningRule):
    """## What it does
    Flags a factory called without `dtype=` (`torch.zeros`, `ones`, `full` with a float,
    `empty`, `rand`, `randn`, `linspace`, `eye`, `torch.tensor([floats])`) whose float32 result
    is an operand of `+ - * /` with a tensor parameter of unknown dtype (one the function reads
    `.shape`, `.device`, `.dtype`, `.size()`... of), in the `forward` of an `nn.Module` of a file
    that runs something in float16/bfloat16: `x + torch.randn(x.shape)`. 0-dim factories do not
    promote and are skipped, and so are calls inside autocast.
    Also, in any function, such a factory combined by arithmetic with a tensor whose dtype the
    function itself follows (it makes or casts another tensor in that dtype: `dtype=x.dtype`,
    `out.to(x.dtype)`, `orig = x.dtype ... .to(orig)`; facts/followed.py), or a value computed
    from it, unless the result is cast or stored in place (`acc += x * w`) afterwards: the
    function is written for the dtype its callers give, float16/bfloat16 among them, and the
    message says so ("when `x` is float16/bfloat16 ...").
    `cat`/`stack`/`where` count only for a factory that copies the followed tensor's device and
    a tensor the function pads, fills or scales with a python float (floating data; an integer
    mask concatenated with float32 is a guess).
    A library's contract is such a condition too (facts/lowp_contract.py): a diffusers scheduler's
    `step(model_output, timestep, sample)` / `add_noise` / `scale_model_input` get the latents of a
    pipeline loaded with `torch_dtype=torch.float16`, and a pipeline's `self.vae.dtype` /
    `self.transformer.dtype` is that dtype: noise drawn without `dtype=` and added to them, or a
    `torch.where(mask > 0.5, 1.0, 0.0)` (two python floats: the default dtype) multiplied into a
    video cast to `self.vae.dtype`, promotes them. A 0-dim entry of a float32 table
    (`alphas_cumprod[t]`) does not promote and is never the float32 reported.
    Two more float32s meet such a followed tensor the same way. A parameter that a module's
    `__init__` makes without `dtype=` beside an already built module it wraps (stored on `self`
    and asked for its `.parameters()` or `.weight`; facts/wrapped_modules.py): the wrapper's own
    parameters are float32 whatever the wrapped module's dtype (PEFT's adaption-prompt gate). And
    a tensor read from an owner whose other tensor the function casts to the followed tensor's
    dtype (`mean = self.vae.bn.running_mean.to(x.dtype)` but `self.vae.bn.running_var` used as
    it is; facts/sibling_casts.py): the function's own cast says the owner's dtype may differ.
    The class around a method can be the sign too (facts/lowp_classes.py). Where another method
    of the class tests a tensor's dtype against float16/bfloat16 or upcasts one and casts the
    result back (`dtype = q.dtype; q = q.float(); ...; probs.to(dtype)`), the class is written
    for half callers, and a factory combined with a tensor parameter in any of its methods is
    reported: by arithmetic, or in `cat`/`stack`/`where` where the factory copies the
    parameter's device (`torch.zeros(shape, device=mask.device)`) and the method pads, fills or
    scales the parameter with a python float (floating data, not an integer mask): diffusers'
    `CrossAttention.prepare_attention_mask`. And a plain class that this file constructs from a
    submodule's output (`DiagonalGaussianDistribution(self.quant_conv(h))`) in a diffusers
    `ModelMixin` / transformers `PreTrainedModel` subclass (loaded with `torch_dtype=torch.float16`
    on the library's path) or in a class written for half callers: the attributes its `__init__`
    derives from that tensor (`self.mean, self.logvar = torch.chunk(parameters, 2, dim=1)`) are
    in the model's dtype, and noise drawn without `dtype=` and added to them promotes them.

    ## Why is this bad?
    The function is written to work for any dtype but builds float32: when a caller passes a
    float16 or bfloat16 tensor, the result is promoted to float32 (the next half-precision layer
    raises `mat1 and mat2 must have the same dtype`, or the model silently runs and stores
    activations in float32), e.g. huggingface/diffusers attention masks padded with
    `torch.zeros` and AUTOMATIC1111's attention hijack building zeros without `dtype=`.

    ## Example
    ```python
    class Noisy(nn.Module):
        def forward(self, x):
            return x + torch.randn(x.shape, device=x.device)

    model = Noisy().half()
    ```

    ## Use instead
    ```python
    class Noisy(nn.Module):
        def forward(self, x):
            return x + torch.randn(x.shape, device=x.device, dtype=x.dtype)
    ```

    ## Fix safety
    Unsafe: it adds `dtype=<parameter>.dtype`, so the factory's values are drawn or rounded in
    the parameter's dtype. Reported at medium confidence, only for arithmetic (`+ - * /`, which
    implies floating data, unlike `cat` of int masks) in the `forward` of an `nn.Module` defined
    in a file that itself runs low precision (a float16/bfloat16 spelling or autocast, outside
    comparisons, comments and docstrings: `dtype == torch.float16` tests a dtype, it does not run
    one; facts/lowp_spelled.py); anywhere
    else the parameter may always be float32, and the rule is silent. A tensor the flow knows is
    low precision is DTL508's.
    """

    code = "DTL510"
    name = "dtype-agnostic-factory"
    summary = "Factory without dtype= (float32) combined with a tensor parameter of unknown dtype"
    queries = (
        "the dtype flow: the factory's dtype and the dtype of the other operand (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "a tensor whose dtype the function follows, and whether the result is cast afterwards (facts/followed.py)",
        "a module that wraps an already built module, whose own new parameters are float32 (facts/wrapped_modules.py)",
        "an owner's tensor read uncast beside its sibling cast to a followed tensor's dtype (facts/sibling_casts.py)",
        "a class written for float16/bfloat16 callers, a parameter used as floating data, a factory built beside it, and a class built from a low-precision model's submodule output (facts/lowp_classes.py)",
        "the enabled autocast region around a node, as the dtype flow records it (facts/dtypes.py `autocast_at`)",
        "whether the file itself runs low precision: a float16/bfloat16/autocast spelling outside comparisons, comments and docstrings (facts/lowp_spelled.py)",
    )
    fix_safety = Safety.UNSAFE
    # a factory, or (facts/sibling_casts.py) a cast to a followed tensor's `.dtype`
    required_triggers = (tuple(exact_word(name) for name in sorted(FACTORIES)) + (exact_word("dtype"),),)
    valid = (
        "import torch\ndef pad(mask, n):\n    return torch.cat([mask, torch.zeros(mask.shape[0], n, dtype=mask.dtype)], -1)\n",
        "import torch\ndef pad(mask, n):\n    return torch.cat([mask, mask.new_zeros(mask.shape[0], n)], -1)\n",
        # a 0-dim factory does not promote
        "import torch\ndef scale(x):\n    return x * torch.tensor(0.5)\n",
        # nothing says a caller passes float16 (an integer mask, most often)
        "import torch\ndef pad(mask, n):\n    return torch.cat([mask, torch.zeros(mask.shape[0], n)], -1)\n",
        "import torch\ndef add_noise(latents, sigma):\n    noise = torch.randn(latents.shape, device=latents.device)\n"
        "    return latents + noise * sigma\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom torch import nn\nclass Noisy(nn.Module):\n    def forward(self, x):\n"
            "        return x + torch.randn(x.shape, device=x.device)\nmodel = Noisy().half()\n",
            fixed="import torch\nfrom torch import nn\nclass Noisy(nn.Module):\n    def forward(self, x):\n"
            "        return x + torch.randn(x.shape, device=x.device, dtype=x.dtype)\nmodel = Noisy().half()\n",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Scale(nn.Module):\n    def forward(self, x):\n"
            "        gain = torch.ones(x.shape[-1], device=x.device)\n        return x * gain\n"
            "model = Scale().to(torch.bfloat16)\n",
            fixed="import torch\nfrom torch import nn\nclass Scale(nn.Module):\n    def forward(self, x):\n"
            "        gain = torch.ones(x.shape[-1], device=x.device, dtype=x.dtype)\n        return x * gain\n"
            "model = Scale().to(torch.bfloat16)\n",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._tensor_like: dict[int, set[str]] = {}
        self._reported: set[int] = set()  # factories already reported

    def _combine(self, node: cst.CSTNode, operands: list[cst.BaseExpression]) -> None:
        function = self.ctx.enclosing(node, cst.FunctionDef)
        if not isinstance(function, cst.FunctionDef):
            return
        if not self._combine_parameter(node, operands, function) and not self._combine_constructed(node, operands, function):
            self._combine_followed(node, operands, function)

    def _combine_constructed(self, node: cst.CSTNode, operands: list[cst.BaseExpression], function) -> bool:
        """A factory's float32 meets, by arithmetic, an attribute the class's ``__init__`` derives
        from the tensor it is constructed with, where this file constructs it from a low-precision
        model's submodule output (facts/lowp_classes.py): a distribution over a float16 VAE's
        moments drawing float32 noise. True when it reported."""
        if not isinstance(node, cst.BinaryOperation) or autocast_enabled_at(self.ctx, node):
            return False
        cls = self.ctx.enclosing(function, cst.ClassDef)
        if not isinstance(cls, cst.ClassDef) or function.name.value == "__init__":
            return False
        attributes = constructor_attributes(cls)
        attribute = next((o for o in operands if isinstance(o, cst.Attribute) and isinstance(o.value, cst.Name)
                          and o.value.value == "self" and o.attr.value in attributes), None)
        if attribute is None:
            return False
        value = self.ctx.flow.value_of(attribute)
        if value is not None and value.dtypes:
            return False  # the flow knows its dtype: DTL508's (or nobody's) business
        factory = next((f for f in (self._factory_within(o, function) for o in operands if o is not attribute) if f), None)
        if factory is None or id(factory) in self._reported or cast_afterwards(self.ctx, node):
            return False
        found = low_construction(self.ctx, cls)
        if found is None:
            return False
        call, why = found
        self._reported.add(id(factory))
        name = self.ctx.code_for(factory.func).strip()
        text = self.ctx.code_for(attribute).strip()
        message = (
            f"`{name}(...)` without dtype= builds float32 and is combined with `{text}`, which `__init__` derives "
            f"from the tensor `{cls.name.value}` is constructed with; line {self.ctx.position(call).start.line} "
            f"constructs it, and {why}: a float16/bfloat16 `{text}` is promoted to float32; pass `dtype={text}.dtype`"
        )
        self.report(factory, message, confidence=Confidence.MEDIUM, fix=self._fix(factory, text))
        return True

    def _combine_followed(self, node: cst.CSTNode, operands: list[cst.BaseExpression], function) -> None:
        """A factory's float32 meets, by arithmetic, a tensor whose dtype the function follows
        (facts/followed.py), and nothing casts the result: a low dtype a caller gives is promoted."""
        if autocast_enabled_at(self.ctx, node):
            return
        followed = next(((o, found) for o in operands if (found := followed_low(self.ctx, o)) is not None), None)
        if followed is None:
            return
        factory = next((f for f in (self._factory_within(o, function) for o in operands if o is not followed[0]) if f), None)
        if not isinstance(node, cst.BinaryOperation):
            # `cat`/`stack`/`where`: only a factory built beside a followed name that the function
            # pads, fills or scales with a float (facts/lowp_classes.py), not an integer mask
            other = followed[0]
            if factory is None or not isinstance(other, cst.Name) or not self._beside_floating(factory, other.value, function):
                return
        if factory is None:
            if not self._combine_wrapper_parameter(node, operands, followed, function):
                self._combine_sibling(node, operands, followed)
            return
        if id(factory) in self._reported or cast_afterwards(self.ctx, node):
            return
        self._reported.add(id(factory))
        other, (_, origin) = followed
        other_text = self.ctx.code_for(other).strip()
        name = self.ctx.code_for(factory.func).strip()
        where = _is_where(self.ctx, factory)
        built = "of two python floats is float32 (the default dtype)" if where else "without dtype= builds float32"
        advice = f"cast it to `{other_text}.dtype`" if where else "pass the dtype the function follows"
        message = (
            f"`{name}(...)` {built} and is combined at line {self.ctx.position(node).start.line} "
            f"with `{other_text}`: {condition(origin)}, `{other_text}` is promoted to float32 and stays so; {advice}"
        )
        fix = self._fix(factory, other_text) if isinstance(other, cst.Name) and not where and any(
            n.value == other.value for n in walk(factory, into_definitions=True) if isinstance(n, cst.Name)) else None
        self.report(factory, message, confidence=Confidence.MEDIUM, fix=fix)

    def _combine_wrapper_parameter(self, node: cst.CSTNode, operands, followed, function) -> bool:
        """A parameter the class's ``__init__`` made without ``dtype=`` beside a module it wraps
        (facts/wrapped_modules.py) meets a tensor whose dtype the method follows: the parameter is
        float32 whatever the wrapped module's dtype. True when it reported."""
        cls = self.ctx.enclosing(function, cst.ClassDef)
        if not isinstance(cls, cst.ClassDef) or cast_afterwards(self.ctx, node):
            return False
        other, (_, origin) = followed
        for operand in operands:
            if operand is other or not (isinstance(operand, cst.Attribute) and isinstance(operand.value, cst.Name)
                                        and operand.value.value == "self"):
                continue
            value = self.ctx.flow.value_of(operand)
            if value is None or value.kind != "tensor" or not value.only("fp32"):
                continue
            made = value.origin_of("fp32")
            factory = made.node if made is not None else None
            init = self.ctx.enclosing(factory, cst.FunctionDef) if isinstance(factory, cst.Call) else None
            if init is None or self.ctx.enclosing(init, cst.ClassDef) is not cls or not self._default_factory(factory):
                continue
            wrapped = wrapped_parameter(init)
            if wrapped is None or id(factory) in self._reported:
                continue
            self._reported.add(id(factory))
            name = self.ctx.code_for(factory.func).strip()
            attribute = self.ctx.code_for(operand).strip()
            other_text = self.ctx.code_for(other).strip()
            message = (
                f"`{name}(...)` without dtype= makes `{attribute}` float32 beside the already built `{wrapped}` this "
                f"module wraps (whatever its dtype), and it is combined at line {self.ctx.position(node).start.line} "
                f"with `{other_text}`: {condition(origin)}, the result is promoted to float32; make it in the wrapped "
                f"module's dtype (`dtype=next({wrapped}.parameters()).dtype`)"
            )
            self.report(factory, message, confidence=Confidence.MEDIUM)
            return True
        return False

    def _default_factory(self, call: cst.Call) -> bool:
        """A default-dtype float factory (``CombiningRule._is_default_factory``); ``torch.tensor``
        only of float values (of ints it is int64, not float32)."""
        if not self._is_default_factory(call):
            return False
        return call_shape(self.ctx, call).name != "tensor" or _has_float(call.args[0].value)

    def _combine_sibling(self, node: cst.CSTNode, operands: list[cst.BaseExpression], followed) -> None:
        """A tensor read from an owner whose other tensor the function casts to the followed
        tensor's dtype, combined with it uncast (facts/sibling_casts.py): the function's own cast
        says the owner's dtype may differ, and this operand keeps the owner's."""
        other, (_, origin) = followed
        target = getattr(origin, "name", "")
        if not target or cast_afterwards(self.ctx, node):
            return
        for operand in operands:
            if operand is other:
                continue
            value = self.ctx.flow.value_of(operand)
            if value is not None and value.dtypes:
                continue  # the flow knows its dtype: the rules that take it decide
            found = uncast_sibling(self.ctx, operand, target)
            if found is None or id(found.read) in self._reported:
                continue
            self._reported.add(id(found.read))
            read = self.ctx.code_for(found.read).strip()
            message = (
                f"`{read}` is combined at line {self.ctx.position(node).start.line} with `{target}` in its own "
                f"dtype, but the function casts another tensor of `{found.owner}` to `{target}.dtype` "
                f"(line {self.ctx.position(found.cast).start.line}): where that cast changes anything (`{target}` "
                f"float16/bfloat16, `{found.owner}` float32), `{target}` is promoted to float32; cast `{read}` "
                f"to `{target}.dtype` too"
            )
            self.report(found.read, message, confidence=Confidence.MEDIUM)
            return

    def _combine_parameter(self, node: cst.CSTNode, operands: list[cst.BaseExpression], function) -> bool:
        """The forward-of-a-low-precision-file case; True when it reported."""
        parameters = self._tensor_parameters(function)
        carrier = next((o for o in operands if self._parameter_in(o, parameters)), None)
        if carrier is None:
            return False
        parameter = carrier.value
        for operand in operands:
            factory = self._factory_within(operand, function)
            if factory is None or autocast_enabled_at(self.ctx, node):
                continue
            # Arithmetic implies floating data; `cat`/`stack` of masks and ids (int or bool,
            # where a float32 result is usually harmless) is a guess, not reported.
            arithmetic = isinstance(node, cst.BinaryOperation)
            name = self.ctx.code_for(factory.func).strip()
            if arithmetic and self._runs_low_precision(function):
                why = "whose dtype the callers choose"
            else:
                evidence = self._class_evidence(function)
                if evidence is None or not (arithmetic or self._beside_floating(factory, parameter, function)):
                    return False
                if self._upcast_before(carrier):
                    return False  # ``if x.dtype in (fp16, bf16): x = x.float()``: the low callers' x is float32 here
                why = (f"and the class is written for float16/bfloat16 callers (a method of it tests or "
                       f"restores a tensor's low dtype: line {self.ctx.position(evidence).start.line}, "
                       f"`{_line_text(self.ctx, evidence)}`)")
            message = (
                f"`{name}(...)` without dtype= builds float32 and is combined with parameter `{parameter}`, "
                f"{why}: a float16/bfloat16 `{parameter}` is promoted to float32; "
                f"pass `dtype={parameter}.dtype`"
            )
            self._reported.add(id(factory))
            self.report(factory, message, confidence=Confidence.MEDIUM, fix=self._fix(factory, parameter))
            return True
        return False

    def _tensor_parameters(self, function: cst.FunctionDef) -> set[str]:
        """Parameters whose dtype this file leaves open (not self/cls, no scalar default)."""
        names = set()
        for param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
            name = param.name.value
            if name in ("self", "cls"):
                continue
            if param.default is not None and not (isinstance(param.default, cst.Name) and param.default.value == "None"):
                continue  # `scale=1.0`, `causal=True`: not a tensor
            names.add(name)
        return names

    def _upcast_before(self, carrier: cst.Name) -> bool:
        """The parameter was made float32 on some path before this read (the flow's value holds
        float32): a class written for half callers upcasts exactly those."""
        value = self.ctx.flow.value_of(carrier)
        return value is not None and FP32 in value.dtypes

    def _parameter_in(self, operand: cst.BaseExpression, parameters: set[str]) -> str | None:
        if not isinstance(operand, cst.Name) or operand.value not in parameters:
            return None
        if operand.value not in self._used_as_tensor(self.ctx.enclosing(operand, cst.FunctionDef)):
            return None  # `sigma * noise`: a scalar parameter is no dtype carrier
        value = self.ctx.flow.value_of(operand)
        if value is not None and value.dtypes and not value.partial:
            return None  # the flow knows its dtype: DTL508's (or nobody's) business
        if value is not None and value.kind not in ("tensor", "unknown"):
            return None
        return operand.value

    def _used_as_tensor(self, function: cst.FunctionDef) -> set[str]:
        """Names the function reads tensor attributes of (``x.shape``, ``x.device``, ``x.dtype``...)."""
        cached = self._tensor_like.get(id(function))
        if cached is None:
            # a field walk: a libcst visitor rebuilds every node it passes
            cached = {
                node.value.value for node in walk(function, into_definitions=True)
                if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
                and node.attr.value in _TENSOR_ATTRIBUTES
            }
            self._tensor_like[id(function)] = cached
        return cached

    def _factory_within(self, operand: cst.BaseExpression, function: cst.FunctionDef) -> cst.Call | None:
        """The factory behind ``operand``, looking through scaling (``weight * noise``)."""
        found = self._factory(operand, function)
        if found is None and isinstance(operand, cst.BinaryOperation) and isinstance(operand.operator, (cst.Multiply, cst.Divide)):
            found = self._factory_within(operand.left, function) or self._factory_within(operand.right, function)
        return found

    def _factory(self, operand: cst.BaseExpression, function: cst.FunctionDef) -> cst.Call | None:
        """The default-dtype factory ``operand`` is (inline) or was assigned from in ``function``."""
        value = self.ctx.flow.value_of(operand)
        if value is None or value.kind != "tensor" or not value.only("fp32"):
            return None
        origin = value.origin_of("fp32")
        factory = origin.node if origin is not None else None
        if not isinstance(factory, cst.Call) or self.ctx.enclosing(factory, cst.FunctionDef) is not function:
            return None
        shape = call_shape(self.ctx, factory)
        if shape is not None and shape.qualified == "torch.where" and _scalar_where(factory):
            return factory  # ``torch.where(mask > 0.5, 1.0, 0.0)``: two python floats, the default dtype
        return factory if self._default_factory(factory) else None

    def _class_evidence(self, function: cst.FunctionDef) -> cst.CSTNode | None:
        """A dtype test or upcast-and-cast-back in a method of the class around ``function``
        (facts/lowp_classes.py): its methods get float16/bfloat16 tensors from their callers."""
        cls = self.ctx.enclosing(function, cst.ClassDef)
        if not isinstance(cls, cst.ClassDef) or self.ctx.enclosing(cls, cst.FunctionDef) is not None:
            return None
        return class_lowp_evidence(self.ctx, cls)

    @staticmethod
    def _beside_floating(factory: cst.Call, parameter: str, function: cst.FunctionDef) -> bool:
        """A `cat`/`stack`/`where` operand: the factory copies the parameter's device (built to sit
        beside it) and the method pads, fills or scales the parameter with a float (floating
        data, not an integer mask; facts/lowp_classes.py)."""
        return mirrors_device(factory, parameter) and floating_parameter(function, parameter)

    def _runs_low_precision(self, function: cst.FunctionDef) -> bool:
        if function.name.value != "forward" or not isinstance(self.ctx.enclosing(function, cst.ClassDef), cst.ClassDef):
            return False
        return runs_low_precision(self.ctx)

    def _fix(self, factory: cst.Call, parameter: str) -> Fix:
        last = factory.args[-1]
        end = self.ctx.position(last.value if isinstance(last.comma, cst.Comma) else last).end
        edit = Edit(end.line, end.column + 1, end.line, end.column + 1, f", dtype={parameter}.dtype")
        return Fix(Safety.UNSAFE, (edit,), "pass dtype=")


def _line_text(ctx, node: cst.CSTNode) -> str:
    """The first line of ``node``'s code, for a message."""
    return ctx.code_for(node).strip().splitlines()[0]


def _is_where(ctx, call: cst.Call) -> bool:
    shape = call_shape(ctx, call)
    return shape is not None and shape.qualified == "torch.where"


def _scalar_where(call: cst.Call) -> bool:
    """``torch.where(cond, a, b)`` with two python float literals: a tensor of the default dtype."""
    values = [a.value for a in call.args if not a.star]
    return len(values) == 3 and all(_is_float_literal(v) and not isinstance(v, cst.Attribute) for v in values[1:])


def _has_float(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Float):
        return True
    if isinstance(expr, (cst.List, cst.Tuple)):
        return any(_has_float(e.value) for e in expr.elements)
    return False

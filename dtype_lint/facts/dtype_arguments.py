"""What the file's own calls of a function give its dtype parameter.

A function that takes a dtype and returns one tensor in it and another in float32 mixes dtypes
only for a caller that asks for float16 or bfloat16 (DTL113). When the function is called in its
own file and every such call passes float32 (diffusers' HunyuanVideo image-to-video pipeline:
``self.prepare_latents(image, ..., torch.float32, device, ...)``, its only call), the mix never
happens in the program as written: a caller elsewhere would have to ask for a low dtype.

The calls are matched by name in the file (``name(...)``, ``self.name(...)``, ``obj.name(...)``
for a method), the argument bound to the parameter by keyword or by position (``self`` skipped
for a method called through an attribute). A call that passes ``*args``/``**kwargs``, leaves the
parameter to its default, or gives it anything but a dtype the flow knows is float32 on every
path means the answer is no.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.flow.values import DTYPE, FP32
from dtype_lint.facts.training import call_name, calls_in


def float32_callers(ctx, function: cst.FunctionDef, parameter: str) -> list[int]:
    """The lines of this file's calls of ``function``, when there is one and every one passes
    ``parameter`` a float32 dtype; else []."""
    params = [*function.params.posonly_params, *function.params.params]
    names = [p.name.value for p in params]
    keyword_only = {p.name.value for p in function.params.kwonly_params}
    method = bool(names) and names[0] in ("self", "cls")
    lines: list[int] = []
    for call in calls_in(ctx.module, into_definitions=True):
        if call_name(call) != function.name.value:
            continue
        through_attribute = isinstance(call.func, cst.Attribute)
        if through_attribute != method:
            return []  # a same-named function of another kind: not sure which one is called
        given = _argument(call, parameter, names[1:] if method else names, parameter in keyword_only)
        value = ctx.flow.value_of(given) if given is not None else None
        if value is None or value.kind != DTYPE or not value.certain or not value.only(FP32):
            return []
        lines.append(ctx.position(call).start.line)
    return lines


def _argument(call: cst.Call, parameter: str, positional: list[str], keyword_only: bool) -> cst.BaseExpression | None:
    if any(arg.star for arg in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == parameter:
            return arg.value
    if keyword_only or parameter not in positional:
        return None
    index = positional.index(parameter)
    given = [arg for arg in call.args if arg.keyword is None]
    return given[index].value if index < len(given) else None

"""A module built around another, already built one: its own new parameters are float32.

``AdaptedAttention(model_type, adapter_len, model)`` stores the attention module it wraps
(``self.model = model``) and creates its own ``nn.Parameter(torch.zeros(1, device=device))``.
The wrapped module was loaded (and maybe cast to float16/bfloat16) before the wrapper exists;
the wrapper's new parameters follow torch's default dtype, float32, whatever the wrapped
module's is (huggingface/peft's adaption prompt, LoRA layers built around a loaded model). The
dtype of the wrapped module stays symbolic: the rules that take this fact report only where the
method itself follows a tensor's dtype (facts/followed.py), and say so.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.training import walk

# What only a module is asked for: its parameters, its weight.
_MODULE_READS = frozenset({"parameters", "named_parameters", "weight", "state_dict", "modules"})


def wrapped_parameter(init: cst.FunctionDef) -> str | None:
    """The parameter of ``__init__`` that is an already built module it wraps: stored on ``self``
    (``self.model = model``) and asked what only a module has (``model.parameters()``,
    ``model.weight``) in ``__init__`` itself."""
    if init.name.value != "__init__":
        return None
    params = {p.name.value for p in (*init.params.posonly_params, *init.params.params, *init.params.kwonly_params)}
    params.discard("self")
    stored, asked = set(), set()
    for node in walk(init.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value in params:
            if any(isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name)
                   and t.target.value.value == "self" for t in node.targets):
                stored.add(node.value.value)
        elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value in params \
                and node.attr.value in _MODULE_READS:
            asked.add(node.value.value)
    found = sorted(stored & asked)
    return found[0] if found else None

"""Whether a file itself runs something in float16/bfloat16, read from what its code spells.

A file that casts (`.half()`, `dtype=torch.float16`), picks a low dtype (`"bf16"`), or opens
an autocast region runs low precision. A file that only *tests* for one does not: PEFT's OFT
layer merges weights with `cast_to_fp32 = device.type == "cpu" and (dtype == torch.float16 or
dtype == torch.bfloat16)`, a guard that upcasts a half weight it may be handed, and says nothing
about its own activations being half. So spellings inside a comparison (`==`, `!=`, `in`,
`is`) are not counted, and neither are comments and docstrings (the words "(b)float16" in a
comment about a CPU fallback are prose).
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.training import child_nodes, string_value

# The spellings of a low dtype or of autocast in an identifier or a string.
LOWP_WORDS = ("float16", "bfloat16", "half", "fp16", "bf16", "autocast")


def runs_low_precision(ctx) -> bool:
    """Some identifier or string of the file outside comparisons, docstrings and comments
    spells a low dtype or autocast (cached on ``ctx``)."""
    cached = getattr(ctx, "_runs_low_precision", None)
    if cached is None:
        cached = _spells_low_precision(ctx.module)
        ctx._runs_low_precision = cached
    return cached


def _spells_low_precision(module: cst.Module) -> bool:
    # a dtype test: ``x.dtype == torch.float16`` checks, it does not cast
    return any(any(word in text for word in LOWP_WORDS) for _, text in code_words(module, skip=(cst.Comparison,)))


def code_words(module: cst.Module, skip: tuple[type, ...] = ()):
    """``(node, text)`` of each identifier and string of the module's code: names, attribute
    names, and strings that are not docstrings (comments are not nodes); a subtree whose root is
    one of ``skip`` is not entered."""
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(module, None)]
    while stack:
        node, parent = stack.pop()
        if skip and isinstance(node, skip):
            continue
        stack.extend((child, node) for child in child_nodes(node))
        if isinstance(node, cst.Name):
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue  # seen as the Attribute
            yield node, node.value
        elif isinstance(node, cst.Attribute):
            yield node, node.attr.value
        elif isinstance(node, cst.SimpleString) and not isinstance(parent, cst.Expr):
            yield node, string_value(node) or ""

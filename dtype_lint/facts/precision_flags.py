"""The values a precision setting can take, where the program or its library says so.

``parser.add_argument("--mixed_precision", choices=["no", "fp16", "bf16"])`` admits exactly
those strings for ``args.mixed_precision``; accelerate's contract is that
``Accelerator.mixed_precision`` is one of "no", "fp16", "bf16", "fp8" (whatever the flag or the
``accelerate config`` file said). A test on such a value (``mp != "no"``, the ``else`` of
``mp == "no"``) then stands for a known set of precisions, which DTL707 reads: a branch that
admits both "fp16" and "bf16" and selects ``torch.float16`` gives float16 to a bf16 run
(huggingface/diffusers 93df5bb: ``torch.float32 if args.mixed_precision == "no" else
torch.float16``). A setting with no declared choices admits anything: None, and no rule guesses.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import assigned_name, call_name, keyword, string_value, training_facts

# accelerate.Accelerator.mixed_precision: accelerate.utils.PrecisionType's values.
ACCELERATE_PRECISIONS = frozenset({"no", "fp16", "bf16", "fp8"})
ACCELERATORS = ("accelerate.Accelerator",)


def argparse_choices(ctx, attribute: str) -> frozenset[str] | None:
    """The string ``choices=`` of ``parser.add_argument("--<attribute>", ...)`` (None: the flag
    is not declared in this file, declares no choices, or a choice is not a string literal)."""
    flags = {f"--{attribute}", f"--{attribute.replace('_', '-')}"}
    found = None
    for call in training_facts(ctx).calls:
        if call_name(call) != "add_argument" or not any(
                string_value(a.value) in flags for a in call.args if a.keyword is None):
            continue
        choices = keyword(call, "choices")
        if not isinstance(choices, (cst.List, cst.Tuple, cst.Set)):
            return None
        values = [string_value(e.value) for e in choices.elements]
        if not values or any(v is None for v in values):
            return None
        if found is not None and found != frozenset(values):
            return None  # two declarations disagree (two parsers in one file)
        found = frozenset(values)
    return found


def _accelerator_names(ctx) -> frozenset[str]:
    """The names this file binds to ``Accelerator(...)``."""
    names = set()
    for call in training_facts(ctx).calls:
        if any(q in ACCELERATORS for q in ctx.names.qualified_names(call.func)):
            name = assigned_name(ctx, call)
            if name is not None:
                names.add(name)
    return frozenset(names)


def admitted_values(ctx, expr: cst.BaseExpression) -> frozenset[str] | None:
    """Every value ``expr`` (``args.mixed_precision``, ``accelerator.mixed_precision``) can
    hold, or None when that is not known."""
    dotted = dotted_name(expr)
    if dotted is None or "." not in dotted:
        return None
    owner, attribute = dotted.rsplit(".", 1)
    if attribute == "mixed_precision" and owner in _accelerator_names(ctx):
        return ACCELERATE_PRECISIONS
    return argparse_choices(ctx, attribute)


def narrowed(ctx, test: cst.BaseExpression) -> tuple[str, frozenset[str], frozenset[str]] | None:
    """For ``x == "no"`` / ``x != "no"`` / ``x in ("fp16", "bf16")`` / ``not in`` on a setting
    whose values are known: (the setting's code, the values for which the test is true, those
    for which it is false). None for any other test."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    compare = test.comparisons[0]
    values = admitted_values(ctx, test.left)
    if values is None:
        return None
    operator = compare.operator
    if isinstance(operator, (cst.Equal, cst.NotEqual)):
        text = string_value(compare.comparator)
        if text is None:
            return None
        tested = frozenset({text})
    elif isinstance(operator, (cst.In, cst.NotIn)) and isinstance(compare.comparator, (cst.List, cst.Tuple, cst.Set)):
        texts = [string_value(e.value) for e in compare.comparator.elements]
        if any(t is None for t in texts):
            return None
        tested = frozenset(texts)
    else:
        return None
    true, false = values & tested, values - tested
    if isinstance(operator, (cst.NotEqual, cst.NotIn)):
        true, false = false, true
    return dotted_name(test.left) or "", true, false

"""facts/flag_logic.py: what a flag expression is on the runs where another flag holds."""

import libcst as cst

from dtype_lint.context import FileContext
from dtype_lint.facts import flag_logic

SOURCE = """import torch
def main(args):
    amp_dtype = torch.bfloat16 if args.bf16 else torch.float16
    low = torch.float16 if not args.bf16 else torch.bfloat16
    use_amp = args.fp16 or args.bf16
    def ctx():
        return amp_dtype
    a = use_amp
    b = use_amp and amp_dtype == torch.float16
    c = not args.bf16
    d = args.fp16
    e = amp_dtype
"""


def _context():
    ctx = FileContext("t.py", SOURCE, cst.parse_module(SOURCE))
    values = {}
    for node in ctx.all_nodes:
        if isinstance(node, cst.Assign) and isinstance(node.targets[0].target, cst.Name):
            values[node.targets[0].target.value] = node.value
        if isinstance(node, cst.Return):
            values["closure"] = node.value
    return ctx, values


def test_the_test_that_picks_bfloat16_is_found_through_names_and_negations():
    ctx, values = _context()
    assert flag_logic.bf16_condition(ctx, values["e"]) == ("args.bf16", True)
    assert flag_logic.bf16_condition(ctx, values["low"]) == ("args.bf16", True)
    assert flag_logic.bf16_condition(ctx, values["closure"]) == ("args.bf16", True)  # a closure's name
    assert flag_logic.bf16_condition(ctx, values["use_amp"]) is None


def test_truth_under_an_assumption_is_three_valued():
    ctx, values = _context()
    bf16 = {"args.bf16": True}
    assert flag_logic.truth(ctx, values["a"], bf16) is True
    assert flag_logic.truth(ctx, values["b"], bf16) is False  # amp_dtype is bfloat16 there
    assert flag_logic.truth(ctx, values["c"], bf16) is False
    assert flag_logic.truth(ctx, values["d"], bf16) is None  # depends on another flag

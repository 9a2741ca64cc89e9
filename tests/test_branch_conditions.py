"""facts/branch_conditions: which nodes of a function can run in one pass."""

import libcst as cst

from dtype_lint.context import FileContext
from dtype_lint.facts.branch_conditions import exclusive, runs_whenever

SOURCE = '''\
def f(args, mode):
    if args.fp16:
        a = 1
    else:
        b = 2
    if not args.fp16:
        c = 3
    if mode == "fp16":
        d = 4
    elif mode == "no":
        e = 5
    if args.other is None:
        g = 6
    if args.other is not None:
        h = 7
    i = 8
'''


def _statements():
    ctx = FileContext("f.py", SOURCE, cst.parse_module(SOURCE))
    found = {}
    for node, entering in ctx.walk_events():
        if entering and isinstance(node, cst.Assign):
            found[node.targets[0].target.value] = node
    return ctx, found


def test_two_sides_of_one_if_and_contradicting_tests_are_exclusive():
    ctx, s = _statements()
    assert exclusive(ctx, s["a"], s["b"])
    assert exclusive(ctx, s["a"], s["c"])  # ``if args.fp16`` / ``if not args.fp16``
    assert exclusive(ctx, s["d"], s["e"])  # ``mode == "fp16"`` / ``mode == "no"``
    assert exclusive(ctx, s["g"], s["h"])  # ``is None`` / ``is not None``


def test_independent_branches_are_not_exclusive():
    ctx, s = _statements()
    assert not exclusive(ctx, s["a"], s["d"])
    assert not exclusive(ctx, s["b"], s["c"])  # both run when ``args.fp16`` is false
    assert not exclusive(ctx, s["a"], s["i"])


def test_runs_whenever():
    ctx, s = _statements()
    assert runs_whenever(ctx, s["i"], s["a"]) is True  # unconditional
    assert runs_whenever(ctx, s["a"], s["i"]) is False

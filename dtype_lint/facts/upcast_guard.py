"""The upcast guard a low dtype slipped past: ``if x.dtype == torch.bfloat16: x = x.float()``
before an op that has no float16 kernel either, or ``if on_cpu and x.dtype in (torch.float16,
torch.bfloat16): x = x.float()`` before one that has none on CUDA. The author wrote the guard for
that op; the defect is the guard's test, so DTL509 reports there (where the fix goes), naming
the op the low dtype still reaches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dtype_lint.facts.flow import lowp_evidence
from dtype_lint.facts.flow.library import dtype_constant
from dtype_lint.facts.training import child_nodes

if TYPE_CHECKING:
    from dtype_lint.context import FileContext


def guard_before(ctx: "FileContext", op: cst.Call, tensor: cst.BaseExpression) -> cst.If | None:
    """The last ``if`` before ``op`` in its function whose test tests the dtype of a name ``tensor``
    reads (directly or through a flag set from such a test) and whose body upcasts that name:
    ``x = x.float()`` / ``x = x.to(torch.float32)``. None when there is none."""
    function = ctx.enclosing(op, cst.FunctionDef, cst.Lambda, cst.ClassDef)
    if not isinstance(function, cst.FunctionDef):
        return None
    names = {node.value for node in _names(tensor)}
    if not names:
        return None
    facts = lowp_evidence.facts_of(function, lambda node: dtype_constant(ctx.names, node))
    line = ctx.position(op).start.line
    found = None
    for node in lowp_evidence.own_nodes(function.body):
        if not isinstance(node, cst.If) or ctx.position(node).start.line >= line or ctx.is_within(op, node):
            continue
        upcast = _upcast_names(node.body) & names
        if not upcast:
            continue
        body_tests, _ = facts.tests(node.test, node)
        if any(test.name in upcast and test.inside for test in body_tests):
            found = node
    return found


def _upcast_names(block: cst.BaseSuite) -> set[str]:
    """The names the block's own statements rebind to their upcast (``x = x.float()``)."""
    found = set()
    for statement in getattr(block, "body", ()):
        for small in getattr(statement, "body", ()) if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and lowp_evidence.is_upcast(small.value):
                receiver = small.value.func.value.value
                if any(isinstance(t.target, cst.Name) and t.target.value == receiver for t in small.targets):
                    found.add(receiver)
    return found


def _names(node: cst.CSTNode):
    if isinstance(node, cst.Name):
        yield node
        return
    if isinstance(node, cst.Attribute):  # ``self.weight``: the owner's, not a local's
        return
    for child in child_nodes(node):
        yield from _names(child)


"""Old-torch fallbacks: code that reaches an API only when the running torch is too old for the
new one (issue 14). Using the deprecated spelling there is the compatible idiom, not a bug:

    scaler = torch.amp.GradScaler(device) if _TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()
    try:
        scaler = torch.amp.GradScaler(device=device)
    except (AttributeError, TypeError):
        scaler = torch.cuda.amp.GradScaler()
    if digit_version(TORCH_VERSION) < digit_version("1.10.0"):
        ...
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from dtype_lint.context import FileContext

# A condition about the installed torch: a version comparison or a feature probe of torch.amp.
_VERSION_TEST = re.compile(r"version|TORCH_(GREATER|LESS|GE|GT|LE|LT|\d)|hasattr\(\s*torch(\.amp)?\s*,", re.IGNORECASE)
# The exceptions an older torch raises for the newer API (missing attribute, unknown argument).
_FALLBACK_ERRORS = re.compile(r"\b(AttributeError|ImportError|ModuleNotFoundError|TypeError|Exception)\b")


def in_old_torch_fallback(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Whether ``node`` runs only on a torch too old for the API a guard tried or tested."""
    child = node
    parent = ctx.parent(child)
    while parent is not None:
        if isinstance(parent, (cst.IfExp, cst.If)) and _is_version_test(ctx, parent.test):
            # The old-torch side: the body of `version < X`, the else of `version >= X`.
            old_side = parent.body if _is_older_than(ctx, parent.test) else parent.orelse
            if child is old_side:
                return True
        if isinstance(parent, (cst.IndentedBlock, cst.Module)) and _after_new_torch_return(ctx, parent, child):
            return True
        if isinstance(parent, cst.ExceptHandler):
            # A bare ``except:`` (Megatron-LM) catches what an old torch raises too.
            if parent.type is None or _FALLBACK_ERRORS.search(ctx.code_for(parent.type)):
                attempt = ctx.parent(parent)
                if isinstance(attempt, cst.Try) and "amp." in ctx.code_for(attempt.body):
                    return True
        child, parent = parent, ctx.parent(parent)
    return False


def _is_version_test(ctx: FileContext, test: cst.BaseExpression) -> bool:
    return bool(_VERSION_TEST.search(ctx.code_for(test)))


def _is_older_than(ctx: FileContext, test: cst.BaseExpression) -> bool:
    """A test true on old torch: ``version < X`` (or ``not`` a newer-than test)."""
    code = ctx.code_for(test)
    return "<" in code or code.lstrip().startswith("not ")


def _after_new_torch_return(ctx: FileContext, block, statement: cst.CSTNode) -> bool:
    """``statement`` follows ``if hasattr(torch, "get_autocast_dtype"): return ...`` in the same
    block: only a torch without the new API gets there (the early-return spelling of ``else``)."""
    body = list(block.body)
    if statement not in body:
        return False
    for earlier in body[: body.index(statement)]:
        if (
            isinstance(earlier, cst.If)
            and earlier.orelse is None
            and _is_version_test(ctx, earlier.test)
            and not _is_older_than(ctx, earlier.test)
            and isinstance(earlier.body, cst.IndentedBlock)
            and earlier.body.body
            and isinstance(earlier.body.body[-1], cst.SimpleStatementLine)
            and isinstance(earlier.body.body[-1].body[-1], (cst.Return, cst.Raise))
        ):
            return True
    return False

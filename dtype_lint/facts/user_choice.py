"""Where a low precision is the user's explicit choice: a flag that is off unless asked for.

A script that casts its model to float16 only under ``if args.fp16:`` (``parser.add_argument(
"--fp16", action="store_true")``), or picks ``dtype = torch.float16`` there, runs in float32 for
whoever does not ask; the float16 run is what the user requested. Rules that judge a set-up
against the hardware it may land on (DTL709: a float16 model on a CPU that is only the fallback
of ``"cuda" if torch.cuda.is_available() else "cpu"``) stay silent on such a choice: the flag was
written for the GPU, and whoever passes it knows where they run. A float16 that is the default
(a literal ``.half()``, ``--half`` defaulting to True, ``torch.float32 if args.fp32 else
torch.float16``) is not a choice and stays reported.

An opt-in test is read as written, through names assigned once (``flag_logic.binding``):
``args.X`` / ``opt.X`` with an ``add_argument("--X", action="store_true")`` (or no ``default``,
or ``default=False``/``None``) in the file; ``args.X == "fp16"`` where ``--X``'s default is
another string; a parameter of the enclosing function that defaults to False or None (the caller
asks); ``a and b`` when either is opt-in, ``a or b`` when both are. A switch of a config this
file does not define (``cfg.common.fp16``, ``args.use_fp16`` of an OmegaConf YAML) is not read as
opt-in by its name: Latte's sample config ships ``use_fp16: True`` (Vchitect/Latte#61, realbugs
``latte_use_fp16_cpu``), fairseq's dataclass ``fp16: bool = False``.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts import flag_logic
from dtype_lint.facts.amp import dtype_literal, literal_bool
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, keyword, string_value, training_facts

MAX_DEPTH = 6
OFF = ("False", "None")


def _add_argument(ctx, attribute: str) -> cst.Call | None:
    """``parser.add_argument("--attribute", ...)`` (or ``--attri-bute``) of this file."""
    flags = {f"--{attribute}", f"--{attribute.replace('_', '-')}"}
    for call in training_facts(ctx).calls:
        if call_name(call) == "add_argument" and any(
                a.keyword is None and string_value(a.value) in flags for a in call.args):
            if keyword(call, "dest") is None:
                return call
    return None


def _flag_off_by_default(ctx, attribute: str) -> bool:
    """``--attribute`` is off unless the command line names it."""
    argument = _add_argument(ctx, attribute)
    if argument is None:
        return False
    default = keyword(argument, "default")
    action = string_value(keyword(argument, "action"))
    if action == "store_false":
        return False
    if default is None:
        return action in (None, "store_true")
    return literal_bool(default) is False or (isinstance(default, cst.Name) and default.value == "None")


def _parameter_off_by_default(ctx, name: cst.Name) -> bool:
    function = ctx.enclosing(name, cst.FunctionDef)
    if function is None:
        return False
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name.value:
            default = param.default
            return isinstance(default, cst.Name) and default.value in OFF
    return False


def opt_in(ctx, test: cst.BaseExpression | None, positive: bool = True, depth: int = 0) -> bool:
    """``test`` (negated when not ``positive``) holds only when the user asked for it."""
    if test is None or depth > MAX_DEPTH:
        return False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return opt_in(ctx, test.expression, not positive, depth + 1)
    if isinstance(test, cst.BooleanOperation):
        both = isinstance(test.operator, cst.Or) == positive  # ``a or b`` true / ``not (a and b)``
        left = opt_in(ctx, test.left, positive, depth + 1)
        right = opt_in(ctx, test.right, positive, depth + 1)
        return (left and right) if both else (left or right)
    if not positive:
        return False
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(test.comparisons[0].operator, cst.Equal):
        chosen = string_value(test.comparisons[0].comparator)
        name = dotted_name(test.left)
        if chosen is None or name is None or "." not in name:
            return False
        argument = _add_argument(ctx, name.rsplit(".", 1)[-1])
        return argument is not None and string_value(keyword(argument, "default")) != chosen
    if isinstance(test, cst.Attribute):
        name = dotted_name(test)
        return name is not None and _flag_off_by_default(ctx, test.attr.value)
    if isinstance(test, cst.Name):
        if _parameter_off_by_default(ctx, test):
            return True
        bound = flag_logic.binding(ctx, test)
        return bound is not None and opt_in(ctx, bound, True, depth + 1)
    return False


def _under_opt_in(ctx, node: cst.CSTNode) -> bool:
    """``node`` runs only inside the body of an ``if`` on an opt-in flag."""
    child, current = node, ctx.parent(node)
    while current is not None and not isinstance(current, (cst.FunctionDef, cst.Lambda)):
        if isinstance(current, cst.If) and child is not current.test and opt_in(ctx, current.test, child is current.body):
            return True
        child, current = current, ctx.parent(current)
    return False


def _literal(ctx, expr: cst.BaseExpression | None) -> str | None:
    """The dtype a literal spells (``torch.float16``, ``"float16"``); a bare name is not read as
    one (the import table follows ``dtype = torch.bfloat16`` assignments, whichever came last)."""
    return None if expr is None or isinstance(expr, cst.Name) else dtype_literal(ctx.names, expr)


def chosen_dtype(ctx, expr: cst.BaseExpression | None, dtype: str, depth: int = 0) -> bool:
    """Every way ``expr`` names ``dtype`` is chosen by an opt-in flag (False when it names it
    unconditionally, or when it is unknown)."""
    if expr is None or depth > MAX_DEPTH:
        return False
    if _literal(ctx, expr) is not None:
        return False  # a literal: the dtype itself, not a choice
    if isinstance(expr, cst.IfExp):
        body = _literal(ctx, expr.body) == dtype or chosen_dtype(ctx, expr.body, dtype, depth + 1)
        orelse = _literal(ctx, expr.orelse) == dtype or chosen_dtype(ctx, expr.orelse, dtype, depth + 1)
        if body and not orelse:
            return opt_in(ctx, expr.test, True)
        if orelse and not body:
            return opt_in(ctx, expr.test, False)
        return False
    name = dotted_name(expr)
    if name is None or not isinstance(expr, cst.Name):
        return False
    found = False
    scope = ctx.enclosing(expr, cst.FunctionDef)
    for statement, value in training_facts(ctx).assignments.get(name, []):
        where = ctx.enclosing(statement, cst.FunctionDef)
        if where is not scope and where is not None:
            continue
        literal = _literal(ctx, value)
        if literal is not None and literal != dtype:
            continue  # ``dtype = torch.float32`` on the other side
        if literal == dtype:
            if not _under_opt_in(ctx, statement):
                return False
            found = True
            continue
        if isinstance(value, (cst.Name, cst.IfExp)) and chosen_dtype(ctx, value, dtype, depth + 1):
            found = True
            continue
        if isinstance(value, cst.Name) and _under_opt_in(ctx, statement):
            found = True
            continue
        return False  # something else may name it
    return found


def low_precision_chosen(ctx, cast: cst.CSTNode, dtype: str = "float16") -> bool:
    """The ``dtype`` that ``cast`` gives is the user's opt-in choice: the cast runs only under an
    opt-in flag, or the dtype it is given (``.to(x)``, ``dtype=x``, ``torch_dtype=x``) is chosen by
    one."""
    if _under_opt_in(ctx, cast):
        return True
    if not isinstance(cast, cst.Call):
        # ``torch.float16 if args.half else torch.float32``: the literal's side of a choice
        child, parent = cast, ctx.parent(cast)
        while isinstance(parent, cst.IfExp) and child is not parent.test:
            if opt_in(ctx, parent.test, child is parent.body):
                return True
            child, parent = parent, ctx.parent(parent)
        return False
    given = keyword(cast, "torch_dtype") or keyword(cast, "dtype")
    if given is None and call_name(cast) == "to":
        given = next((a.value for a in cast.args if a.keyword is None), None)
    return chosen_dtype(ctx, given, dtype)

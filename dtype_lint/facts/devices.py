"""Where a module runs: the devices a device expression may name, and where a model is placed.

The flow tracks dtypes, not devices; the hardware rules (DTL709) need only a coarse answer:
may this model run on the CPU? ``device_choices`` reads a device expression (a literal,
``torch.device(...)``, a ternary on ``torch.cuda.is_available()``, a name assigned one of those in
the same function, a parameter's default, an argparse ``--device`` default); ``placements``
collects every device a model name is moved to in one scope (``.to(device)``, ``.cuda()``,
``.cpu()``, ``device_map=``), and says when a wrapper (``accelerator.prepare``, DeepSpeed,
DataParallel) places it instead.
"""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.user_choice import opt_in
from dtype_lint.facts.training import call_name, keyword, positional, string_value, training_facts, walk

CPU, CUDA, OTHER = "cpu", "cuda", "other"  # OTHER: mps, xpu, "auto", a device the caller picks
MOVES = frozenset({"to", "cuda", "cpu"})
# Calls that take a model and place it themselves (on the accelerator's device).
PLACING_WRAPPERS = frozenset({
    "prepare", "prepare_model", "initialize", "setup", "setup_module", "DataParallel",
    "DistributedDataParallel", "FullyShardedDataParallel", "dispatch_model", "init_inference",
})
# What a model moved by a chained ``.cpu()`` may be for besides running: saving or reading it.
SAVING = frozenset({"save_pretrained", "state_dict", "save", "push_to_hub", "save_model", "parameters",
                    "named_parameters", "numpy", "tolist", "item"})
DTYPE_WORDS = re.compile(r"(^|\.)(float16|half|bfloat16|float32|float|float64|double)$|dtype")


def _device_of_string(text: str) -> str:
    head = text.split(":")[0].strip().lower()
    return CPU if head == CPU else CUDA if head in (CUDA, "gpu") else OTHER


def scope_of(ctx, node: cst.CSTNode) -> cst.CSTNode:
    """The function whose body holds ``node`` (the module at top level): where a model's device
    and dtype are read together."""
    return ctx.enclosing(node, cst.FunctionDef) or ctx.module


def in_scope(ctx, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
    """``node`` is in ``scope`` itself, not in a function nested in it."""
    return scope_of(ctx, node) is scope


def _parameter_default(scope: cst.CSTNode, name: str) -> cst.BaseExpression | None | bool:
    """The default of parameter ``name`` of the function ``scope`` (False: not a parameter)."""
    if not isinstance(scope, cst.FunctionDef):
        return False
    params = scope.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return param.default
    return False


def argparse_default(ctx, attribute: str) -> cst.BaseExpression | None:
    """``default="cpu"`` of ``parser.add_argument("--device", ...)`` for ``opt.device`` (the
    value on the runs that do not pass the flag)."""
    flags = {f"--{attribute}", f"--{attribute.replace('_', '-')}"}
    for call in training_facts(ctx).calls:
        if call_name(call) == "add_argument" and any(string_value(a.value) in flags for a in call.args if a.keyword is None):
            return keyword(call, "default")
    return None


def device_choices(ctx, expr: cst.BaseExpression | None, scope: cst.CSTNode, depth: int = 0) -> frozenset[str]:
    """The devices ``expr`` may name in ``scope`` ({cpu, cuda, other}); empty when unknown."""
    if expr is None or depth > 5:
        return frozenset()
    text = string_value(expr)
    if text is not None:
        return frozenset({_device_of_string(text)})
    if isinstance(expr, cst.FormattedString):  # ``f"cuda:{rank}"``: the literal head names the device
        head = next((p.value for p in expr.parts[:1] if isinstance(p, cst.FormattedStringText)), "")
        return frozenset({_device_of_string(head)}) if ":" in head else frozenset()
    if isinstance(expr, cst.Call) and call_name(expr) == "device" and expr.args:
        return device_choices(ctx, expr.args[0].value, scope, depth + 1)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        return _helper_devices(ctx, expr.func.value, depth)
    if isinstance(expr, cst.IfExp):
        return device_choices(ctx, expr.body, scope, depth + 1) | device_choices(ctx, expr.orelse, scope, depth + 1)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "type":  # ``device.type``
        return device_choices(ctx, expr.value, scope, depth + 1)
    name = dotted_name(expr)
    if name is None:
        return frozenset()
    found: set[str] = set()
    for statement, value in training_facts(ctx).assignments.get(name, []):
        if not in_scope(ctx, statement, scope):
            continue
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            helper = _helper_devices(ctx, value.func.value, depth + 1)
            if helper:  # ``device = select_device(device)``: the helper decides whatever it is given
                found |= helper
                continue
        attrs = {id(n.attr) for n in walk(value) if isinstance(n, cst.Attribute)}  # ``torch.device``'s ``device``
        if any(dotted_name(n) == name for n in walk(value) if isinstance(n, (cst.Name, cst.Attribute)) and id(n) not in attrs):
            continue  # ``device = torch.device(device)``: the parameter's own value, read below
        found |= device_choices(ctx, value, ctx.module if scope is ctx.module else scope, depth + 1)
    default = _parameter_default(scope, name) if "." not in name else False
    if default is not False:
        found |= device_choices(ctx, default, scope, depth + 1) | {OTHER}  # a caller may pass another
    elif not found and isinstance(scope, cst.FunctionDef) and "." not in name:
        found |= device_choices(ctx, expr, ctx.module, depth + 1)  # a module-level ``device = ...``
    if not found and "." in name:
        default_flag = argparse_default(ctx, name.rsplit(".", 1)[-1])
        if default_flag is not None:  # the flag's default; the command line may name another
            found |= device_choices(ctx, default_flag, ctx.module, depth + 1) | {OTHER}
    return frozenset(found)


def _helper_devices(ctx, name: str, depth: int) -> frozenset[str]:
    """The devices a device helper of this file returns (YOLOv5's ``select_device``: ``cpu``
    without CUDA, ``cuda:N`` otherwise): every ``return`` must name one, else unknown."""
    helper = next((s for s in ctx.module.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
    if helper is None:
        return frozenset()
    returns = [n for n in walk(helper.body) if isinstance(n, cst.Return)]
    found: set[str] = set()
    for statement in returns:
        choices = device_choices(ctx, statement.value, helper, depth + 1)
        if not choices:
            return frozenset()
        found |= choices
    return frozenset(found)


def _loaded_onto(ctx, key: str, scope: cst.CSTNode) -> frozenset[str] | None:
    """The devices of ``torch.load(f, map_location=device)`` when ``key`` is bound, in ``scope``,
    to something read out of what it loaded (``model = ckpt["model"].eval()``): map_location
    places every tensor of the checkpoint, modules included, on that device."""
    loads: dict[str, cst.BaseExpression] = {}
    for call in training_facts(ctx).calls:
        if call_name(call) == "load" and in_scope(ctx, call, scope) and keyword(call, "map_location") is not None:
            target = assigned_to(ctx, call)
            if target is not None and ctx.parent(call) is ctx.enclosing(call, cst.Assign):
                loads[target] = keyword(call, "map_location")
    if not loads:
        return None
    found: set[str] = set()
    for statement, value in training_facts(ctx).assignments.get(key, []):
        if not in_scope(ctx, statement, scope):
            continue
        roots = {dotted_name(n.value) for n in walk(value) if isinstance(n, cst.Subscript)}
        roots |= {dotted_name(n.func.value) for n in walk(value)
                  if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "get"}
        for root in sorted(roots & loads.keys()):
            found |= device_choices(ctx, loads[root], scope) or {OTHER}
    return frozenset(found) if found else None


def chain_root(expr: cst.BaseExpression) -> str | None:
    """``model`` for ``model.half().to(device)``: the dotted name a method chain starts from."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        expr = expr.func.value
    return dotted_name(expr)


def assigned_to(ctx, node: cst.CSTNode) -> str | None:
    """``model`` in ``model = <node>`` (one target, plain or annotated)."""
    statement = ctx.enclosing(node, cst.Assign, cst.AnnAssign, cst.SimpleStatementLine)
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        return dotted_name(statement.targets[0].target)
    if isinstance(statement, cst.AnnAssign):
        return dotted_name(statement.target)
    return None


def _move_device(ctx, call: cst.Call, scope: cst.CSTNode) -> frozenset[str] | None:
    """The devices one ``.to(...)`` / ``.cuda()`` / ``.cpu()`` / ``device_map=`` call names;
    None when the call places nothing (``.to(torch.float16)``)."""
    method = call_name(call)
    if method == "cuda":
        return frozenset({CUDA})
    if method == "cpu":
        return frozenset({CPU})
    device = keyword(call, "device_map") or keyword(call, "device")
    if device is None and method == "to":
        first = positional(call, 0)
        if first is not None and not DTYPE_WORDS.search(dotted_name(first) or ""):
            value = ctx.flow.value_of(first)
            if value is None or value.kind != "dtype":
                device = first
    if device is None:
        return None
    return device_choices(ctx, device, scope) or frozenset({OTHER})


def _only_to_save(ctx, call: cst.Call) -> bool:
    """``model.cpu().save_pretrained(path)``: moved to be written out, not to run."""
    parent = ctx.parent(call)
    return isinstance(parent, cst.Attribute) and parent.attr.value in SAVING


def placements(ctx, key: str, scope: cst.CSTNode) -> frozenset[str] | None:
    """Every device model ``key`` is placed on in ``scope`` (OTHER when a wrapper places it or the
    device is unknown); None when nothing in the scope places it."""
    found: set[str] = set()
    placed = False
    for call in training_facts(ctx).calls:
        if not in_scope(ctx, call, scope):
            continue
        if call_name(call) in PLACING_WRAPPERS and any(chain_root(a.value) == key for a in call.args):
            placed = True
            found.add(OTHER)
            continue
        is_move = isinstance(call.func, cst.Attribute) and call_name(call) in MOVES
        if not is_move and keyword(call, "device_map") is None and keyword(call, "device") is None:
            continue
        if chain_root(call) != key and assigned_to(ctx, call) != key:
            continue
        if _only_to_save(ctx, call):
            continue
        devices = _move_device(ctx, call, scope)
        if devices is not None:
            placed = True
            found |= devices
    loaded = _loaded_onto(ctx, key, scope)
    if loaded is not None:
        placed = True
        found |= loaded
    return frozenset(found) if placed else None


AVAILABILITY = re.compile(r"is_available\(\)")


def _cpu_only_fallback(ctx, expr: cst.BaseExpression | None, scope: cst.CSTNode, depth: int = 0) -> bool | None:
    """Whether ``expr`` names the CPU only as the fallback of a CUDA availability test (``"cuda"
    if torch.cuda.is_available() else "cpu"``): True; False when it may name the CPU otherwise (a
    literal, a parameter's default, a flag); None when it never names the CPU."""
    if expr is None or depth > 5:
        return False
    if CPU not in device_choices(ctx, expr, scope):
        return None
    if isinstance(expr, cst.Call) and call_name(expr) == "device" and expr.args:
        return _cpu_only_fallback(ctx, expr.args[0].value, scope, depth + 1)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "type":
        return _cpu_only_fallback(ctx, expr.value, scope, depth + 1)
    if isinstance(expr, cst.IfExp):
        if AVAILABILITY.search(ctx.code_for(expr.test)):
            # the side taken when CUDA is there must not name the CPU; the other side is the fallback
            negated = isinstance(expr.test, cst.UnaryOperation) and isinstance(expr.test.operator, cst.Not)
            present = expr.orelse if negated else expr.body
            return CPU not in device_choices(ctx, present, scope)
        sides = (_cpu_only_fallback(ctx, expr.body, scope, depth + 1), _cpu_only_fallback(ctx, expr.orelse, scope, depth + 1))
        return False if False in sides else True
    if string_value(expr) is not None:
        return False  # ``"cpu"`` written as such
    name = dotted_name(expr)
    if name is None or _parameter_default(scope, name) is not False:
        return False
    if "." in name and not name.startswith("self."):
        return False
    answers = []
    for statement, value in training_facts(ctx).assignments.get(name, []):
        if in_scope(ctx, statement, scope) or (not answers and in_scope(ctx, statement, ctx.module)):
            answer = _cpu_only_fallback(ctx, value, scope if in_scope(ctx, statement, scope) else ctx.module, depth + 1)
            if answer is False and _only_when_no_cuda_or_asked(ctx, statement):
                answer = True  # ``else: self.device = torch.device("cpu")`` after ``if self.cuda:``
            answers.append(answer)
    return bool(answers) and False not in answers and True in answers


def _only_when_no_cuda_or_asked(ctx, statement: cst.CSTNode) -> bool:
    """``statement`` runs only where CUDA is missing or the user asked for another device: it
    sits in the ``else`` of an ``if`` whose test holds only with CUDA present and no opt-in
    switch (fairseq's trainer: ``self.cuda = torch.cuda.is_available() and not cfg.common.cpu
    and not self.tpu``, then ``if self.cuda: ... else: self.device = torch.device("cpu")``)."""
    def needs_cuda_unasked(test: cst.BaseExpression, depth: int = 0) -> bool:
        """``test`` true implies CUDA is there and no opt-in switch is on; so its negation
        (the ``else``) means no CUDA, or a switch the user turned on."""
        if depth > 4:
            return False
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            # ``a and b`` false: ``a`` or ``b`` false; one conjunct that says "CUDA is there" and
            # every other one "a switch is off" (or CUDA again) make each way out a fallback
            parts = _conjuncts(test)
            return any(needs_cuda_unasked(p, depth + 1) for p in parts) and all(
                needs_cuda_unasked(p, depth + 1) or _switch_off(p) for p in parts)
        if AVAILABILITY.search(ctx.code_for(test)) and not isinstance(test, cst.UnaryOperation):
            return isinstance(test, cst.Call)
        name = dotted_name(test)
        if name is not None and (name.startswith("self.") or "." not in name):
            values = [v for _, v in training_facts(ctx).assignments.get(name, [])]
            return len(values) == 1 and needs_cuda_unasked(values[0], depth + 1)
        return False

    def _switch_off(part: cst.BaseExpression) -> bool:
        """``not <opt-in switch>``: false only when the user asked for it."""
        if not (isinstance(part, cst.UnaryOperation) and isinstance(part.operator, cst.Not)):
            return False
        inner = part.expression
        name = dotted_name(inner)
        if name is not None and name.startswith("self.") and name.count(".") == 1:
            values = [v for _, v in training_facts(ctx).assignments.get(name, [])]
            inner = values[0] if len(values) == 1 else inner
        return opt_in(ctx, inner, True)

    child, current = statement, ctx.parent(statement)
    while current is not None and not isinstance(current, (cst.FunctionDef, cst.Module)):
        if isinstance(current, cst.If) and child is current.orelse:
            if needs_cuda_unasked(current.test):
                return True
        child, current = current, ctx.parent(current)
    return False


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def cpu_only_as_fallback(ctx, key: str, scope: cst.CSTNode) -> bool:
    """Every move of model ``key`` in ``scope`` that may land on the CPU does so only when CUDA
    is missing (``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")``)."""
    fallback = False
    for call in training_facts(ctx).calls:
        if not in_scope(ctx, call, scope) or not isinstance(call.func, cst.Attribute) or call_name(call) not in MOVES:
            continue
        if chain_root(call) != key and assigned_to(ctx, call) != key or _only_to_save(ctx, call):
            continue
        if call_name(call) == "cpu":
            return False
        device = keyword(call, "device") or (positional(call, 0) if call_name(call) == "to" else None)
        if device is None:
            continue
        answer = _cpu_only_fallback(ctx, device, scope)
        if answer is False:
            return False
        fallback = fallback or answer is True
    return fallback and _loaded_onto(ctx, key, scope) is None

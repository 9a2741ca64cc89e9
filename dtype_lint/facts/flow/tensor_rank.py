"""Which tensors the code shows to be 0-dim: torch's promotion treats them apart.

torch promotes a dimensioned tensor and a 0-dim tensor of the same category (float with float)
to the dimensioned tensor's dtype: ``latents_fp16 * alphas_cumprod[t]`` stays float16 although
``alphas_cumprod`` is float32 (torch's type-promotion doc: "if a zero-dimension tensor operand has
a higher category than dimensioned operands, we promote to a type with sufficient size and
category"; same category: the dimensioned operand's dtype; checked on torch 2.13). A scheduler's
tables are float32 and read one step at a time, so without this every latent would look float32.

The flow keeps no shapes; this module answers from the code alone, and only "yes, 0-dim" where
every binding says so (anything it cannot read is "not known to be 0-dim", which keeps ordinary
promotion):
- a 1-D table indexed by one scalar (``self.alphas_cumprod[timestep]``), where the table is
  1-D by construction (``torch.linspace``, ``torch.arange``, ``torch.tensor`` of a flat list or of a
  parameter documented ``List[float]``, ``torch.cumprod(.., dim=0)``, elementwise arithmetic of
  those with numbers, slices) on every assignment the class makes, and the index is a python int
  (a literal, a parameter annotated ``int``, int arithmetic, a helper parameter every call in the
  class passes such an int) — an index tensor (``alphas_cumprod[timesteps]``, a batch) is not;
- ``torch.tensor(1.0)`` (a number, not a list), a reduction with no ``dim`` (``x.sum()``);
- arithmetic, elementwise functions and casts of 0-dim tensors and numbers, and names, attributes
  and in-class helper results every binding or return of which is 0-dim.
"""

from __future__ import annotations

import libcst as cst

from dtype_lint.facts.training import walk

_ELEMENTWISE = frozenset("sqrt rsqrt exp log log1p expm1 abs sin cos tan tanh sigmoid neg clamp clip pow square".split())
_KEEPS = frozenset("to float double half bfloat16 clone detach cpu cuda type contiguous".split())
_REDUCTIONS = frozenset("sum mean prod max min amax amin std var norm".split())
ONE_D_FACTORIES = frozenset({"torch.linspace", "torch.arange", "torch.logspace"})
_CUMULATIVE = frozenset({"cumprod", "cumsum"})
_MAX_DEPTH = 16


def _calls_torch(names, func: cst.BaseExpression, wanted) -> str | None:
    for qualified in names.qualified_names(func):
        if qualified in wanted or qualified.rpartition(".")[2] in wanted and qualified.startswith("torch."):
            return qualified
    return None


class Ranks:
    """0-dim and 1-D questions about expressions of one file (``ctx``: its FileContext, whose import
    table, source order and parents the questions read)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.names = ctx.names
        self.module = ctx.module
        self._bindings: dict[int, dict] = {}  # per scope node: name -> [assigned values] or None
        self._memo: dict[tuple, bool] = {}

    # -- the two questions --------------------------------------------------------------------
    def zero_dim(self, expr: cst.BaseExpression, function: cst.FunctionDef | None, cls: cst.ClassDef | None,
                 depth: int = 0) -> bool:
        key = ("zero", id(expr), id(function), id(cls))
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # a cycle is "not known"
        found = depth <= _MAX_DEPTH and self._zero(expr, function, cls, depth)
        self._memo[key] = found
        return found

    def one_dim(self, expr: cst.BaseExpression, function: cst.FunctionDef | None, cls: cst.ClassDef | None,
                depth: int = 0) -> bool:
        key = ("one", id(expr), id(function), id(cls))
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False
        found = depth <= _MAX_DEPTH and self._one(expr, function, cls, depth)
        self._memo[key] = found
        return found

    # -- 0-dim ----------------------------------------------------------------------------------
    def _zero(self, expr, function, cls, depth) -> bool:
        d = depth + 1
        if isinstance(expr, cst.Subscript):
            index = _single_index(expr)
            return index is not None and self.scalar_int(index, function, cls, d) \
                and self.one_dim(expr.value, function, cls, d)
        if isinstance(expr, cst.BinaryOperation):
            sides = (expr.left, expr.right)
            zero = [self.zero_dim(s, function, cls, d) for s in sides]
            return any(zero) and all(z or self.python_number(s, function, cls, d) for z, s in zip(zero, sides))
        if isinstance(expr, cst.UnaryOperation):
            return self.zero_dim(expr.expression, function, cls, d)
        if isinstance(expr, cst.IfExp):
            sides = (expr.body, expr.orelse)
            zero = [self.zero_dim(s, function, cls, d) for s in sides]
            return any(zero) and all(z or _number(s) for z, s in zip(zero, sides))
        if isinstance(expr, cst.Name):
            values = self._assigned(expr.value, function, cls, expr)
            return bool(values) and all(self.zero_dim(v, f, cls, d) for v, f in values)
        if isinstance(expr, cst.Attribute) and _is_self(expr.value) and cls is not None:
            values = self._attribute_values(expr.attr.value, cls)
            return bool(values) and all(self.zero_dim(v, f, cls, d) for v, f in values)
        if isinstance(expr, cst.Call):
            return self._zero_call(expr, function, cls, d)
        return False

    def _zero_call(self, call: cst.Call, function, cls, d) -> bool:
        func = call.func
        first = call.args[0].value if call.args else None
        if _calls_torch(self.names, func, {"torch.tensor", "torch.scalar_tensor", "torch.as_tensor"}):
            return first is not None and (_number(first) or self.scalar_int(first, function, cls, d))
        qualified = _calls_torch(self.names, func, {f"torch.{n}" for n in _ELEMENTWISE})
        if qualified is not None:
            return first is not None and self.zero_dim(first, function, cls, d)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in _KEEPS or method in _ELEMENTWISE:
                return self.zero_dim(func.value, function, cls, d) if not self.names.qualified_names(func) else False
            if method in _REDUCTIONS and not call.args and not self.names.qualified_names(func):
                return True  # ``x.sum()``: every element, one value
            if _is_self(func.value) and cls is not None:
                returns = self._returns(_method(cls, method))
                return bool(returns) and all(self.zero_dim(r, f, cls, d) for r, f in returns)
        return False

    # -- 1-D --------------------------------------------------------------------------------------
    def _one(self, expr, function, cls, depth) -> bool:
        d = depth + 1
        if isinstance(expr, cst.Subscript):
            return len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice) \
                and self.one_dim(expr.value, function, cls, d)
        if isinstance(expr, cst.BinaryOperation):
            sides = (expr.left, expr.right)
            one = [self.one_dim(s, function, cls, d) for s in sides]
            return any(one) and all(o or self.python_number(s, function, cls, d) or self.zero_dim(s, function, cls, d)
                                    for o, s in zip(one, sides))
        if isinstance(expr, cst.UnaryOperation):
            return self.one_dim(expr.expression, function, cls, d)
        if isinstance(expr, cst.IfExp):
            return self.one_dim(expr.body, function, cls, d) and self.one_dim(expr.orelse, function, cls, d)
        if isinstance(expr, cst.Name):
            values = self._assigned(expr.value, function, cls, expr)
            return bool(values) and all(self.one_dim(v, f, cls, d) for v, f in values)
        if isinstance(expr, cst.Attribute) and _is_self(expr.value) and cls is not None:
            values = self._attribute_values(expr.attr.value, cls)
            if not values:
                return False
            one = [self.one_dim(v, f, cls, d) for v, f in values]
            # a table the class builds 1-D on one branch and converts from a caller's data on
            # another (``torch.from_numpy(trained_betas)``) is the same table: one shape
            return any(one) and all(o or self._converted_parameter(v, f) for o, (v, f) in zip(one, values))
        if isinstance(expr, cst.Call):
            return self._one_call(expr, function, cls, d)
        return False

    def _one_call(self, call: cst.Call, function, cls, d) -> bool:
        func = call.func
        first = call.args[0].value if call.args else None
        if _calls_torch(self.names, func, ONE_D_FACTORIES):
            return True
        if _calls_torch(self.names, func, {"torch.tensor", "torch.as_tensor"}):
            return first is not None and self._flat_list(first, function)
        if _calls_torch(self.names, func, {f"torch.{n}" for n in _CUMULATIVE}):
            return first is not None and self.one_dim(first, function, cls, d)
        if _calls_torch(self.names, func, {f"torch.{n}" for n in _ELEMENTWISE}):
            return first is not None and self.one_dim(first, function, cls, d)
        if _calls_torch(self.names, func, {"torch.cat"}):
            return isinstance(first, (cst.List, cst.Tuple)) and bool(first.elements) and all(
                self.one_dim(e.value, function, cls, d) for e in first.elements)
        if isinstance(func, cst.Attribute) and not self.names.qualified_names(func):
            method = func.attr.value
            if method in _KEEPS or method in _ELEMENTWISE or method in _CUMULATIVE or method == "flip":
                return self.one_dim(func.value, function, cls, d)
            if _is_self(func.value) and cls is not None:
                returns = self._returns(_method(cls, method))
                return bool(returns) and all(self.one_dim(r, f, cls, d) for r, f in returns)
        if isinstance(func, cst.Name) and not self.names.qualified_names(func):
            returns = self._returns(self._module_function(func.value))
            return bool(returns) and all(self.one_dim(r, f, None, d) for r, f in returns)
        return False

    def _converted_parameter(self, expr: cst.BaseExpression, function) -> bool:
        """``torch.from_numpy(p)`` / ``torch.tensor(p, ...)`` of a parameter ``p`` of ``function``."""
        if not isinstance(expr, cst.Call) or not expr.args or function is None:
            return False
        if not _calls_torch(self.names, expr.func, {"torch.from_numpy", "torch.tensor", "torch.as_tensor"}):
            return False
        first = expr.args[0].value
        return isinstance(first, cst.Name) and _parameter(function, first.value) is not None

    def _flat_list(self, expr: cst.BaseExpression, function) -> bool:
        """A list of numbers (a literal, or a local list built by ``append`` of non-lists), or a
        parameter documented as ``List[float]``."""
        if isinstance(expr, (cst.List, cst.Tuple)):
            return bool(expr.elements) and all(
                not isinstance(e.value, (cst.List, cst.Tuple, cst.ListComp)) and not isinstance(e, cst.StarredElement)
                for e in expr.elements)
        if not isinstance(expr, cst.Name) or function is None:
            return False
        param = _parameter(function, expr.value)
        if param is not None:
            annotation = param.annotation
            text = cst.Module([]).code_for_node(annotation.annotation) if annotation is not None else ""
            return "List[float]" in text or "list[float]" in text
        values = self._assigned(expr.value, function, None)
        if not values or not all(isinstance(v, cst.List) and not v.elements for v, _ in values):
            return False
        for node in walk(function):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and isinstance(node.func.value, cst.Name) and node.func.value.value == expr.value:
                if node.func.attr.value != "append" or any(
                        isinstance(a.value, (cst.List, cst.Tuple, cst.ListComp)) for a in node.args):
                    return False
        return True

    def python_number(self, expr: cst.BaseExpression, function, cls, depth: int = 0) -> bool:
        """A python number: a literal, a python int, a parameter annotated ``float``, or their
        arithmetic (``eta * 0.5``)."""
        if _number(expr) or self.scalar_int(expr, function, cls, depth + 1):
            return True
        if isinstance(expr, cst.BinaryOperation):
            return self.python_number(expr.left, function, cls, depth + 1) \
                and self.python_number(expr.right, function, cls, depth + 1)
        if isinstance(expr, cst.Name) and function is not None:
            param = _parameter(function, expr.value)
            if param is not None and param.annotation is not None and not self._assigned(expr.value, function, cls, expr):
                text = cst.Module([]).code_for_node(param.annotation.annotation).replace(" ", "")
                return text in ("float", "Optional[float]", "float|None", "int", "Optional[int]")
        return False

    # -- python ints --------------------------------------------------------------------------
    def scalar_int(self, expr: cst.BaseExpression, function, cls, depth: int = 0) -> bool:
        """``expr`` is a python int (or 0-dim): a literal, int arithmetic, ``int(...)``/``len(...)``,
        a parameter annotated ``int``, or one every call in the class passes such an int."""
        if depth > _MAX_DEPTH:
            return False
        d = depth + 1
        if isinstance(expr, cst.Integer):
            return True
        if isinstance(expr, cst.UnaryOperation):
            return self.scalar_int(expr.expression, function, cls, d)
        if isinstance(expr, cst.BinaryOperation):
            return self.scalar_int(expr.left, function, cls, d) and self.scalar_int(expr.right, function, cls, d)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("int", "len") \
                and not self.names.qualified_names(expr.func):
            return True
        if isinstance(expr, cst.Attribute) and _is_self(expr.value) and expr.attr.value == "config":
            return False
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Attribute) and _is_self(expr.value.value) \
                and expr.value.attr.value == "config":
            return True  # ``self.config.num_train_timesteps``: a registered config number
        if isinstance(expr, cst.Attribute) and _is_self(expr.value) and cls is not None:
            # ``self.num_inference_steps``: None until set_timesteps(num_inference_steps: int)
            values = [(v, f) for v, f in self._attribute_values(expr.attr.value, cls) or () if not _is_none(v)]
            return bool(values) and all(self.scalar_int(v, f, cls, d) for v, f in values)
        if isinstance(expr, cst.Name) and function is not None:
            param = _parameter(function, expr.value)
            if param is not None and not self._assigned(expr.value, function, cls):
                return self._int_parameter(param, function, cls, d)
            values = self._assigned(expr.value, function, cls, expr)
            return bool(values) and all(self.scalar_int(v, f, cls, d) for v, f in values)
        return False

    def _int_parameter(self, param: cst.Param, function: cst.FunctionDef, cls, depth: int) -> bool:
        if param.annotation is not None:
            text = cst.Module([]).code_for_node(param.annotation.annotation).replace(" ", "")
            return text in ("int", "Optional[int]", "int|None")
        if cls is None:
            return False
        position = _position(function, param.name.value)
        if position is None:
            return False
        calls = []
        for method in _methods(cls):
            for node in walk(method):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _is_self(node.func.value) \
                        and node.func.attr.value == function.name.value:
                    calls.append((node, method))
        if not calls:
            return False
        for call, method in calls:
            argument = _argument(call, position - 1, param.name.value)  # ``self`` is not passed
            if argument is None or not self.scalar_int(argument, method, cls, depth):
                return False
        return True

    # -- bindings -------------------------------------------------------------------------------
    def _assigned(self, name: str, function, cls, use: cst.CSTNode | None = None) -> list | None:
        """The values ``name`` is assigned in ``function`` (each with the function) that may reach
        ``use`` (all of them without ``use``), or None when some binding is not a plain
        ``name = value`` (a loop target, an augmented assignment...)."""
        scope = function if function is not None else self.module  # module-level code: the module
        if scope is None:
            return None
        table = self._bindings.get(id(scope))
        if table is None:
            table = self._bindings[id(scope)] = _local_bindings(scope)
        values = table.get(name)
        if values is None:
            return None
        if use is not None:
            values = _reaching(values, use, self._position, self._parent_within(scope))
        return [(v, function) for _, v in values]

    def _position(self, node: cst.CSTNode) -> int | None:
        """``node``'s number in the file's source-order walk (None: not a node of the file)."""
        try:
            return self.ctx.source_order(node)[0]
        except KeyError:
            return None

    def _parent_within(self, scope: cst.CSTNode):
        """The file's parent links, stopping at ``scope`` (a loop around a function is not around its code)."""
        def parent(node: cst.CSTNode) -> cst.CSTNode | None:
            return self.ctx.parent(node) if node is not scope else None
        return parent

    def _attribute_values(self, attr: str, cls: cst.ClassDef) -> list | None:
        """The values ``self.attr`` is assigned in the class, less the moves and casts of itself
        (``self.alphas_cumprod = self.alphas_cumprod.to(device)``), which keep its shape."""
        table = self._bindings.get(id(cls))
        if table is None:
            table = self._bindings[id(cls)] = _attribute_bindings(cls)
        values = table.get(attr)
        if values is None:
            return None
        return [(v, f) for v, f in values if not _moved_self(v, attr)]

    def _returns(self, function: cst.FunctionDef | None) -> list:
        if function is None:
            return []
        found = []
        for node in walk(function):
            if isinstance(node, cst.Return):
                if node.value is None:
                    return []
                found.append((node.value, function))
        return found

    def _module_function(self, name: str) -> cst.FunctionDef | None:
        if self.module is None:
            return None
        for statement in self.module.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
                return statement
        return None


def _moved_self(value: cst.BaseExpression, attr: str) -> bool:
    """``self.attr.to(...)`` / ``.float()``...: the attribute itself, moved or cast."""
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _KEEPS \
        and isinstance(value.func.value, cst.Attribute) and _is_self(value.func.value.value) \
        and value.func.value.attr.value == attr


_LOOPS = (cst.For, cst.While)


def _reaching(values: list, use: cst.CSTNode, position, parent) -> list:
    """The (assignment, value) pairs that may reach ``use``: the last assignment before it when it
    is in a block around ``use`` (it then hides the earlier ones), else every one before it; and
    those after it in a loop around it (the next iteration)."""
    at = position(use)
    if at is None:
        return values

    def ancestors(node):
        found = []
        current = parent(node)
        while current is not None:
            found.append(current)
            current = parent(current)
        return found

    def order(node, missing):
        found = position(node)
        return missing if found is None else found

    around = ancestors(use)
    around_ids = {id(n) for n in around}
    before = [(a, v) for a, v in values if order(a, at) < at]
    later = [(a, v) for a, v in values if order(a, -1) > at and any(
        isinstance(loop, _LOOPS) and id(loop) in around_ids and id(loop) in {id(n) for n in ancestors(a)}
        for loop in around)]
    if before:
        last = before[-1]
        blocks = [n for n in ancestors(last[0]) if isinstance(n, (cst.IndentedBlock, cst.SimpleStatementSuite))]
        if all(id(b) in around_ids for b in blocks):
            before = [last]
    return before + later


def _single_index(node: cst.Subscript) -> cst.BaseExpression | None:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    return node.slice[0].slice.value


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        return _number(expr.expression)
    return isinstance(expr, (cst.Integer, cst.Float))


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _methods(cls: cst.ClassDef) -> list:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return [s for s in body if isinstance(s, cst.FunctionDef)]


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    return next((m for m in _methods(cls) if m.name.value == name), None)


def _all_params(function: cst.FunctionDef) -> list:
    return [*function.params.posonly_params, *function.params.params, *function.params.kwonly_params]


def _parameter(function: cst.FunctionDef | None, name: str) -> cst.Param | None:
    if not isinstance(function, cst.FunctionDef):
        return None
    return next((p for p in _all_params(function) if p.name.value == name), None)


def _position(function: cst.FunctionDef, name: str) -> int | None:
    params = [*function.params.posonly_params, *function.params.params]
    return next((i for i, p in enumerate(params) if p.name.value == name), None)


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if any(a.star for a in call.args):
        return None
    if 0 <= position < len(positional):
        return positional[position].value
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)


def _local_bindings(function: cst.FunctionDef | cst.Module) -> dict:
    """name -> [values] for names bound only by plain ``name = value``; None for other bindings."""
    table: dict = {}
    for node in walk(function):
        if node is function:
            continue
        kind = type(node)  # exact types (leaf classes): isinstance on libcst's ABCs is slow here
        if kind is cst.Assign:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    values = table.setdefault(target.target.value, [])
                    if values is not None:
                        values.append((node, node.value))
                else:
                    for sub in walk(target.target):
                        if isinstance(sub, cst.Name):
                            table[sub.value] = None
        elif (kind is cst.AugAssign or kind is cst.AnnAssign) and isinstance(node.target, cst.Name):
            table[node.target.value] = None
        elif kind is cst.For or kind is cst.CompFor:
            for sub in walk(node.target):
                if isinstance(sub, cst.Name):
                    table[sub.value] = None
        elif kind is cst.WithItem and node.asname is not None:
            for sub in walk(node.asname.name):
                if isinstance(sub, cst.Name):
                    table[sub.value] = None
        elif kind is cst.NamedExpr and isinstance(node.target, cst.Name):
            table[node.target.value] = None
    return table


def _attribute_bindings(cls: cst.ClassDef) -> dict:
    """attr -> [(value, method)] for ``self.attr = value`` in the class's methods; None where
    ``self.attr`` is also bound otherwise (augmented, unpacked, in-place)."""
    table: dict = {}
    for method in _methods(cls):
        for node in walk(method):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    t = target.target
                    if isinstance(t, cst.Attribute) and _is_self(t.value):
                        values = table.setdefault(t.attr.value, [])
                        if values is not None:
                            values.append((node.value, method))
                    elif isinstance(t, (cst.Tuple, cst.List)):
                        for sub in walk(t):
                            if isinstance(sub, cst.Attribute) and _is_self(sub.value):
                                table[sub.attr.value] = None
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and isinstance(node.target, cst.Attribute) \
                    and _is_self(node.target.value):
                table[node.target.attr.value] = None
    return table

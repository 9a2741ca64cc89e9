"""What a function's own code says about the precision of the tensors it handles.

A function that tests a tensor's dtype against a low one (``if x.dtype == torch.bfloat16:``,
``x.dtype in (torch.float16, torch.bfloat16)``, ``orig_dtype not in [torch.float, torch.double]``,
``x.dtype != torch.float32``), or that remembers a tensor's dtype, upcasts the tensor and casts
a result back to the remembered dtype (``orig = x.dtype; x = x.float(); ...; out.to(orig)``), is
written for float16/bfloat16 inputs: that is evidence, not a guess, even where the tensor
arrives through a parameter whose dtype the flow does not know. The interpreter gives such a
tensor the value "float16 or bfloat16 where known" (partial: other dtypes stay possible and
unknown) at the bindings that reach the evidence, and narrows it in the branches of the dtype
tests, so what the code upcasts on one path and not on another is told apart.

Only plain local names and parameters are evidenced: an attribute's dtype (``self.weight``)
belongs to its owner, which the flow tracks elsewhere.

A weaker kind, kept apart (``FollowsOrigin``, ``FunctionDtypeFacts.follows``): a function that
makes or casts another tensor in ``x``'s dtype (``torch.zeros(n, dtype=x.dtype)``,
``out.to(x.dtype)``, ``orig = x.dtype ... .to(orig)``, ``torch.finfo(x.dtype)``) is written for
whatever dtype its callers give ``x``: float16/bfloat16 are among the dtypes it means to take,
so a float32 that another part of it fixes meets a low ``x`` on some caller's path. Only the
rules that state that condition in their message ask for it (``Flow.value_of(follows=True)``).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

import libcst as cst

from dtype_lint.facts.training import child_nodes
from dtype_lint.facts.flow.values import FLOATS, FP32, FP64, LOW, TENSOR, UNKNOWN, Origin, Value, make, promote_pair

# dtype_constant(node) -> "fp16" / "bf16" / "fp32"... or None (the interpreter's reader).
DtypeReader = Callable[[cst.BaseExpression], "str | None"]

_EQUAL = (cst.Equal, cst.Is, cst.In)
_UNEQUAL = (cst.NotEqual, cst.IsNot, cst.NotIn)
_CAST_BACK = frozenset({"to", "type"})
_UPCASTS = frozenset({"float", "double"})


@dataclasses.dataclass(frozen=True)
class DtypeTest:
    """``name``'s dtype is one of ``dtypes`` (``inside``) or none of them (not ``inside``)."""

    name: str
    dtypes: frozenset
    inside: bool

    def negated(self) -> "DtypeTest":
        return dataclasses.replace(self, inside=not self.inside)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """``name`` may be float16/bfloat16, as ``node`` shows; ``seeds``: the ids of the ``Name``
    targets that bind it before ``node`` (the bindings whose unknown value the evidence fills);
    ``parameter``: it is a parameter not rebound before ``node``."""

    name: str
    node: cst.CSTNode
    seeds: frozenset
    parameter: bool


@dataclasses.dataclass
class FunctionDtypeFacts:
    """The dtype tests and the evidence of one function (its own body, not nested definitions)."""

    evidence: dict  # name -> Evidence
    aliases: dict  # ``orig_dtype`` -> ``x`` for ``orig_dtype = x.dtype``
    flags: dict  # ``cast_to_fp32`` -> (its one assigned test, whether no constant is assigned too)
    read: DtypeReader
    blocks: dict  # id(statement) -> (the statements of its block, its index there)
    follows: dict = dataclasses.field(default_factory=dict)  # name -> Evidence: its dtype is followed

    def tests(self, test: cst.BaseExpression, at: cst.CSTNode | None = None, depth: int = 0) -> tuple[list, list]:
        """The DtypeTests that hold in the body of ``if test:`` (the statement ``at``) and in its ``else``."""
        if depth > 4:
            return [], []
        if isinstance(test, cst.Name) and at is not None:
            set_just_before = self._set_before(test.value, at)
            if set_just_before is not None:  # ``cast = x.dtype == torch.float16`` in the same block: it holds
                return self.tests(set_just_before, None, depth + 1)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            body, orelse = self.tests(test.expression, None, depth + 1)
            return orelse, body
        if isinstance(test, cst.BooleanOperation):
            left, right = self.tests(test.left, None, depth + 1), self.tests(test.right, None, depth + 1)
            if isinstance(test.operator, cst.And):
                return left[0] + right[0], []  # both hold in the body; the else knows neither
            return [], left[1] + right[1]
        if isinstance(test, cst.Name) and test.value in self.flags:
            expression, alone = self.flags[test.value]
            body, orelse = self.tests(expression, None, depth + 1)
            # ``cast = False`` on another path: a false flag says nothing of the dtype
            return body, orelse if alone else []
        found = _comparison(test, self.aliases, self.read)
        return ([found], [found.negated()]) if found is not None else ([], [])

    def _set_before(self, name: str, statement: cst.CSTNode) -> cst.BaseExpression | None:
        """The test last assigned to ``name`` by a statement of ``statement``'s own block before it."""
        statements, index = self.blocks.get(id(statement), ((), 0))
        for earlier in reversed(statements[:index]):
            if not isinstance(earlier, cst.SimpleStatementLine):
                if any(True for node in own_nodes(earlier) if isinstance(node, cst.Name) and node.value == name):
                    return None  # a branch or loop may set it
                continue
            for small in earlier.body:
                if isinstance(small, cst.Assign) and any(
                        isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets):
                    value = small.value
                    return value if isinstance(value, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)) else None
        return None


def facts_of(function: cst.FunctionDef, read: DtypeReader) -> FunctionDtypeFacts:
    nodes = list(own_nodes(function.body))
    order = {id(node): index for index, node in enumerate(nodes)}
    assigned: dict[str, list] = {}  # name -> the expressions assigned to it, but constants
    constant: set[str] = set()  # names also assigned ``None`` / ``False`` / ``True``
    for node in nodes:
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    if isinstance(node.value, cst.Name) and node.value.value in ("None", "False", "True"):
                        constant.add(target.target.value)
                    else:
                        assigned.setdefault(target.target.value, []).append(node.value)
    # an alias or a flag assigned twice may mean something else on another path
    aliases = {name: _dtype_of(values[0]) for name, values in assigned.items()
               if len(values) == 1 and _dtype_of(values[0]) is not None}
    flags = {name: (values[0], name not in constant) for name, values in assigned.items() if len(values) == 1
             and isinstance(values[0], (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation))}
    blocks = {}
    for node in (function.body, *nodes):
        if isinstance(node, cst.IndentedBlock):
            blocks.update((id(statement), (node.body, index)) for index, statement in enumerate(node.body))
    facts = FunctionDtypeFacts({}, aliases, flags, read, blocks)
    shown: dict[str, cst.CSTNode] = {}
    for node in nodes:
        if isinstance(node, cst.Comparison):
            found = _comparison(node, aliases, read)
            if found is not None and _says_low(found):
                shown.setdefault(found.name, node)
    for tensor, node in _cast_backs(nodes, aliases):
        if tensor not in shown or order[id(node)] < order[id(shown[tensor])]:
            shown[tensor] = node
    params = {param.name.value for param in (*function.params.posonly_params, *function.params.params,
                                             *function.params.kwonly_params)}
    parents = {id(child): node for node in (function.body, *nodes) for child in child_nodes(node)}
    for name, node in shown.items():
        seeds = frozenset(id(target) for target in _dominating_bindings(node, name, parents, blocks))
        facts.evidence[name] = Evidence(name, node, seeds, parameter=name in params and not seeds)
    followed: dict[str, cst.CSTNode] = {}
    tensors = _used_as_tensor(nodes)
    for name, node in _dtype_followed(nodes, aliases):
        if name not in facts.evidence and name in tensors:
            followed.setdefault(name, node)
    for name, node in followed.items():
        seeds = frozenset(id(target) for target in _dominating_bindings(node, name, parents, blocks))
        facts.follows[name] = Evidence(name, node, seeds, parameter=name in params and not seeds)
    for name, (node, targets) in _chain_followed(nodes).items():
        if name not in facts.evidence and name not in facts.follows and name in tensors:
            facts.follows[name] = Evidence(name, node, frozenset(id(t) for t in targets), parameter=False)
    return facts


def _chain_followed(nodes: list) -> dict:
    """name -> (the cast, its bindings) for a local bound to an attribute chain whose dtype the
    function follows: ``x = x.to(self.base_layer.weight.dtype)`` then ``w = self.base_layer.weight.data``.
    The chain's dtype does not change within the call, so every binding of ``w`` to it holds the
    followed dtype (an adapter's base weight, in the model's float16/bfloat16 on a caller's path)."""
    followed: dict[str, cst.CSTNode] = {}
    for node in nodes:
        if not isinstance(node, cst.Call):
            continue
        spelled = _spelled(node.func)
        if spelled is None or spelled.startswith(_NOT_TORCH):
            continue
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else spelled
        for arg in node.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword is not None and keyword != "dtype" or keyword is None and method not in _CASTS:
                continue
            value = arg.value
            if isinstance(value, cst.Attribute) and value.attr.value == "dtype" and isinstance(value.value, (cst.Attribute, cst.Call)):
                chain = _chain_text(value.value)
                if chain is not None:
                    followed.setdefault(chain, node)
    if not followed:
        return {}
    found: dict[str, tuple] = {}
    for node in nodes:
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            chain = _chain_text(node.value)
            if chain in followed:
                name = node.targets[0].target.value
                cast, targets = found.get(name, (followed[chain], ()))
                found[name] = (cast, targets + (node.targets[0].target,))
    return found


_SAME_TENSOR = (".data", ".detach()")


def _chain_text(expr: cst.BaseExpression) -> str | None:
    """``self.base_layer.weight`` for ``self.base_layer.weight.data``: an attribute chain through
    names, argument-less calls (``self.get_base_layer()``) and subscripts by a name or a string,
    without the suffixes that keep the same tensor; None for anything else or a plain name."""
    current = expr
    while True:
        if isinstance(current, cst.Attribute):
            current = current.value
        elif isinstance(current, cst.Call) and not current.args and isinstance(current.func, cst.Attribute):
            current = current.func.value
        elif isinstance(current, cst.Subscript) and len(current.slice) == 1 and isinstance(current.slice[0].slice, cst.Index) \
                and isinstance(current.slice[0].slice.value, (cst.Name, cst.SimpleString)):
            current = current.value
        else:
            break
    if not isinstance(current, cst.Name) or not isinstance(expr, (cst.Attribute, cst.Call, cst.Subscript)):
        return None
    text = "".join(cst.Module([]).code_for_node(expr).split())
    changed = True
    while changed:
        changed = False
        for suffix in _SAME_TENSOR:
            if text.endswith(suffix):
                text, changed = text[: -len(suffix)], True
    return text if "." in text or "[" in text else None


# Calls that make or cast a tensor in a dtype they are given (the dtype is followed, not tested).
_CASTS = frozenset({"to", "type", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
_DTYPE_INFO = frozenset({"finfo"})
_NOT_TORCH = ("np.", "numpy.", "jnp.", "tf.")


def _dtype_followed(nodes: list, aliases: dict) -> Iterator[tuple[str, cst.CSTNode]]:
    """(tensor, the call) where the function uses ``x.dtype`` (or ``orig`` of ``orig = x.dtype``)
    to make or cast another tensor: ``dtype=x.dtype`` given to a torch call, ``y.to(x.dtype)``,
    ``y.type(orig)``, ``torch.finfo(x.dtype)``."""
    def source(expr: cst.BaseExpression) -> str | None:
        found = _dtype_of(expr)
        if found is None and isinstance(expr, cst.Name):
            found = aliases.get(expr.value)
        return found

    for node in nodes:
        if not isinstance(node, cst.Call):
            continue
        func = node.func
        spelled = _spelled(func)
        if spelled is None or spelled.startswith(_NOT_TORCH):
            continue
        method = func.attr.value if isinstance(func, cst.Attribute) else spelled
        for arg in node.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword is not None and keyword != "dtype":
                continue
            if keyword is None and method not in _CASTS and method not in _DTYPE_INFO:
                continue
            name = source(arg.value)
            if name is not None:
                yield name, node


# Attributes only a tensor has (a model or a config has ``.dtype``, ``.device`` and ``.to`` too).
_TENSOR_ONLY = frozenset({"shape", "size", "ndim", "dim", "view", "reshape", "unsqueeze", "squeeze", "transpose",
                          "permute", "contiguous", "flatten", "numel", "new_zeros", "new_ones", "new_empty",
                          "new_full", "masked_fill", "clamp", "chunk", "split", "expand"})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.MatrixMultiply)


def _used_as_tensor(nodes: list) -> set[str]:
    """Plain names the function uses as tensors: a tensor-only attribute (``x.shape``,
    ``x.view(...)``), an arithmetic operand or a positional argument of a ``torch.``/``F.`` op; a followed dtype is evidence only on those (a
    ``config.dtype`` or ``model.dtype`` followed says nothing of a tensor)."""
    found = set()
    for node in nodes:
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.attr.value in _TENSOR_ONLY:
            found.add(node.value.value)
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _ARITHMETIC):
            found.update(side.value for side in (node.left, node.right) if isinstance(side, cst.Name))
        elif isinstance(node, cst.Call) and (_spelled(node.func) or "").startswith(("torch.", "F.")):
            # ``F.linear(x, w)``, ``torch.matmul(value, scores)``: a torch op's operands
            found.update(arg.value.value for arg in node.args if arg.keyword is None and isinstance(arg.value, cst.Name))
    return found


def _spelled(func: cst.BaseExpression) -> str | None:
    """``torch.zeros`` / ``y.to`` / ``finfo`` as written (the root of a method call kept)."""
    parts = []
    while isinstance(func, cst.Attribute):
        parts.append(func.attr.value)
        func = func.value
    if isinstance(func, cst.Name):
        parts.append(func.value)
    elif not parts:
        return None
    else:
        parts.append("?")
    return ".".join(reversed(parts))


def _dominating_bindings(node: cst.CSTNode, name: str, parents: dict, blocks: dict) -> Iterator[cst.Name]:
    """The bindings of ``name`` every path to ``node`` passes: the earlier statements of the blocks
    around it (an assignment in a sibling branch, ``if odd: x = x.float()``, is another path)."""
    current = parents.get(id(node))
    while current is not None:
        if id(current) in blocks:
            statements, index = blocks[id(current)]
            yield from _bindings([small for statement in statements[:index]
                                  if isinstance(statement, cst.SimpleStatementLine) for small in statement.body], name)
        current = parents.get(id(current))


def _says_low(test: DtypeTest) -> bool:
    """A test that shows the author expects a low dtype: one is named, or the test singles out
    the dtypes that are not float32/float64 (``x.dtype != torch.float32``)."""
    if test.dtypes & LOW:
        return True
    return not test.inside and bool(test.dtypes) and test.dtypes <= {FP32, FP64}


def _comparison(node: cst.BaseExpression, aliases: dict, read: DtypeReader) -> DtypeTest | None:
    """``x.dtype == torch.bfloat16`` / ``orig_dtype in (torch.float16, torch.bfloat16)`` / ``!=``..."""
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    name = _dtype_of(node.left)
    if name is None and isinstance(node.left, cst.Name):
        name = aliases.get(node.left.value)
    if name is None or not isinstance(target.operator, (*_EQUAL, *_UNEQUAL)):
        return None
    if isinstance(target.operator, (cst.In, cst.NotIn)):
        if not isinstance(target.comparator, (cst.Tuple, cst.List, cst.Set)):
            return None
        parts = [element.value for element in target.comparator.elements]
    else:
        parts = [target.comparator]
    dtypes = [read(part) for part in parts]
    if not dtypes or any(dtype is None for dtype in dtypes):
        return None
    return DtypeTest(name, frozenset(dtypes), isinstance(target.operator, _EQUAL))


def _dtype_of(node: cst.BaseExpression) -> str | None:
    """``x`` for ``x.dtype`` (a plain name)."""
    if isinstance(node, cst.Attribute) and node.attr.value == "dtype" and isinstance(node.value, cst.Name):
        return node.value.value
    return None


def _cast_backs(nodes: list, aliases: dict) -> Iterator[tuple[str, cst.CSTNode]]:
    """(tensor, the alias's assignment) for ``orig = x.dtype`` where the function upcasts ``x``
    (``x.float()``, ``x.to(torch.float32)``) and casts something back to ``orig``."""
    upcast = {node.func.value.value for node in nodes if isinstance(node, cst.Call) and is_upcast(node)}
    cast_back = set()
    for node in nodes:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _CAST_BACK:
            cast_back.update(arg.value.value for arg in node.args if isinstance(arg.value, cst.Name)
                             and (arg.keyword is None or arg.keyword.value == "dtype"))
    for node in nodes:
        if isinstance(node, cst.Assign) and _dtype_of(node.value) is not None:
            tensor = _dtype_of(node.value)
            names = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
            if tensor in upcast and any(aliases.get(name) == tensor and name in cast_back for name in names):
                yield tensor, node
    # ``x = x_in; x = x.to(torch.float32); ...; out.to(dtype=x_in.dtype)``: the same cast back,
    # spelled without the alias, to the input a copy of which is upcast (the input itself is not
    # rebound, so its ``.dtype`` at the cast back is still the one it came with).
    copies = {}  # ``x`` -> ``x_in`` for ``x = x_in``
    for node in nodes:
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name):
            copies.update((t.target.value, node.value.value) for t in node.targets if isinstance(t.target, cst.Name))
    kept_inputs = {copies[name] for name in upcast if name in copies} - set(copies) - upcast
    for node in nodes:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _CAST_BACK:
            for arg in node.args:
                tensor = _dtype_of(arg.value) if arg.keyword is None or arg.keyword.value == "dtype" else None
                if tensor in kept_inputs and not any(True for _ in _bindings(nodes, tensor)):
                    yield tensor, node


def is_upcast(call: cst.Call) -> bool:
    """``x.float()`` / ``x.double()`` / ``x.to(torch.float32)`` on a plain name (spelled, not resolved:
    the evidence is what the author wrote)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
        return False
    if func.attr.value in _UPCASTS and not call.args:
        return True
    if func.attr.value == "to":
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value == "dtype":
                value = arg.value
                if isinstance(value, cst.Attribute) and value.attr.value in ("float32", "float", "float64", "double"):
                    return True
    return False


def _bindings(nodes: list, name: str) -> Iterator[cst.Name]:
    """The ``Name`` targets of the assignments to ``name`` among ``nodes``."""
    for node in nodes:
        if isinstance(node, (cst.Assign,)):
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value == name:
                    yield target.target
        elif isinstance(node, cst.AnnAssign) and node.value is not None \
                and isinstance(node.target, cst.Name) and node.target.value == name:
            yield node.target


def own_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every syntax node under ``node`` in source order, without nested functions, classes and
    lambdas (iterative, on the fields: ``node.children`` rebuilds each node through a visitor)."""
    stack = list(reversed(child_nodes(node)))
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        yield current
        stack.extend(reversed(child_nodes(current)))


class EvidenceOrigin(Origin):
    """The origin of a low dtype the function's own code shows (a dtype test, a cast back)."""

    __slots__ = ()

    def describe(self) -> str:
        return f"line {self.line} (`{self.text}`: the function is written for float16/bfloat16 tensors)"


class FollowsOrigin(EvidenceOrigin):
    """The origin of a low dtype a function takes because it follows a tensor's dtype, whatever the
    callers give (``dtype=x.dtype``): float16/bfloat16 on a caller's path, not in every program."""

    __slots__ = ("name",)

    def __init__(self, node: cst.CSTNode, resolve, name: str = "") -> None:
        super().__init__(node, resolve)
        self.name = name  # the tensor whose dtype is followed

    def describe(self) -> str:
        return f"line {self.line} (`{self.text}`: the function follows the dtype its callers give `{self.name}`)"


class ContractOrigin(FollowsOrigin):
    """The origin of a low dtype a library's contract gives a method's parameter (a diffusers
    scheduler's ``step(model_output, t, sample)``: facts/lowp_contract.py), on a caller's path."""

    __slots__ = ("why",)

    def __init__(self, node: cst.CSTNode, resolve, name: str = "", why: str = "") -> None:
        super().__init__(node, resolve, name)
        self.why = why

    def describe(self) -> str:
        return f"line {self.line} (`{self.name}`: {self.why})"


def promote_evidenced(a: Value, b: Value) -> tuple[frozenset, bool]:
    """``promote(a, b)`` where the float16 of one and the bfloat16 of the other both come from
    evidence (a dtype test, a followed dtype, a library contract) do not meet: the evidence says
    "float16 or bfloat16", the one precision the function's callers give every such tensor, not a
    float16 tensor beside a bfloat16 one (which would promote to float32)."""
    def evidence_of(value: Value, dtype: str) -> bool:
        return any(d == dtype and isinstance(o, EvidenceOrigin) for d, o in value.origins)
    dtypes = set()
    for x in a.dtypes:
        for y in b.dtypes:
            if x != y and x in LOW and y in LOW and evidence_of(a, x) and evidence_of(b, y):
                continue
            dtypes.add(promote_pair(x, y))
    return frozenset(dtypes), a.partial or b.partial


def evidenced(value: Value | None, origin: EvidenceOrigin, widen: bool = True) -> Value | None:
    """``value`` as the evidence has it: a tensor whose dtype nothing else tells becomes "float16 or
    bfloat16 where known" (partial). With ``widen`` (a binding inside the function), a float tensor
    the flow knows gains the low dtypes: a module's ``nn.Parameter`` is float32 to the flow only
    until someone casts the module."""
    if widen and value is not None and value.kind == TENSOR and value.dtypes and value.dtypes <= FLOATS:
        added = tuple((dtype, origin) for dtype in sorted(LOW - value.dtypes))
        return value.replace(dtypes=value.dtypes | LOW, origins=value.origins + added)
    if value is not None and (value.dtypes or value.kind not in (TENSOR, UNKNOWN)):
        return value
    if value is None:
        return make(TENSOR, LOW, origin).replace(partial=True)
    return value.with_dtypes(LOW, origin, partial=True, kind=TENSOR)


def narrowed(value: Value | None, test: DtypeTest) -> Value | None:
    """``value`` where ``test`` holds: ``x`` in the body of ``if x.dtype == torch.bfloat16:`` is
    bfloat16, in its ``else`` anything it was but bfloat16."""
    if value is None or value.kind != TENSOR or not value.dtypes:
        return value
    dtypes = value.dtypes & test.dtypes if test.inside else value.dtypes - test.dtypes
    partial = value.partial and not (test.inside and dtypes == test.dtypes)
    if dtypes == value.dtypes and partial == value.partial:
        return value
    origins = tuple((dtype, origin) for dtype, origin in value.origins if dtype in dtypes)
    return value.replace(dtypes=frozenset(dtypes), origins=origins, partial=partial if dtypes else False)


def without_evidence(value: Value | None, kind: type = EvidenceOrigin) -> Value | None:
    """``value`` without the low dtypes only the evidence (of ``kind``: ``FollowsOrigin`` for the
    followed dtypes alone) gives: what a rule that does not take that evidence sees."""
    if value is None or not any(isinstance(origin, kind) for _, origin in value.origins):
        return value
    kept = tuple((dtype, origin) for dtype, origin in value.origins if not isinstance(origin, kind))
    dtypes = frozenset(dtype for dtype, _ in kept) | (value.dtypes - {d for d, _ in value.origins})
    return value.replace(dtypes=dtypes, origins=kept, partial=value.partial if dtypes else False)


def narrowed_along(value: Value, test: DtypeTest, origin: EvidenceOrigin) -> Value:
    """``value`` where ``test`` holds, for the low dtypes it has from the evidence ``origin`` on the
    tested name only: those the test rules out for that name go."""
    gone = frozenset(d for d, o in value.origins if o is origin and (d in test.dtypes) != test.inside)
    if not gone or value.kind != TENSOR:
        return value
    dtypes = value.dtypes - gone
    origins = tuple((d, o) for d, o in value.origins if d not in gone)
    return value.replace(dtypes=dtypes, origins=origins, partial=value.partial if dtypes else False)

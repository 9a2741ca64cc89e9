"""The statement-level abstract interpreter that fills a :class:`~dtype_lint.facts.dtypes.Flow`.

It walks each statement once, in program order, with an environment mapping dotted names
(``model``, ``self.unet``, ``batch``) to :class:`Value`. Branches run on copies and are joined;
loops run until the environment stops changing (at most three passes, one when nested deeper
than two); a call to a function or method defined in the same file runs its body with the
arguments' values (memoised per distinct arguments, depth-limited). Functions nobody in the file
calls are run at the end with unknown parameters, so every node of the file gets its values.
"""

from __future__ import annotations

import bisect
import dataclasses
import posixpath

import libcst as cst

from dtype_lint.facts import amp, config_values, lowp_contract, precision_sources
from dtype_lint.facts.dtypes import Cast, Flow, FunctionSummary, OptimizerInfo, ScalerInfo
from dtype_lint.facts.flow import checkpoint_loads as checkpoints
from dtype_lint.facts.flow import hf_datasets
from dtype_lint.facts.flow import library as lib
from dtype_lint.facts.flow import loaders
from dtype_lint.facts.flow import lowp_evidence
from dtype_lint.facts.flow import op_results
from dtype_lint.facts.flow.seeding import (
    WorldOrigin, activation, argument_value, built_value, context_value, part_value, result_value, returned_value,
    world_tensor_parameter, world_values,
)
from dtype_lint.facts.flow.tensor_rank import ONE_D_FACTORIES, Ranks
from dtype_lint.facts.flow.values import (
    AUTOCAST, BATCH, BF16, BOOL, CLASS, CONST, DTYPE, FLOATS, FP16, FP32, FP64, IMAGE, INSTANCE, INT, LONG_NAMES, LOW,
    MAPPING, MAYBE_AUTOCAST, MODULE, NUMPY, OPTIMIZER, PARAMS, SCALER, SHORT_NAMES, TENSOR, TOKENIZER, TUPLE,
    UNKNOWN, EntryOrigin, Origin, PartOrigin, Value, join, make, merge_parts, part_dtypes, promote,
)
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import child_nodes, walk

MAX_DEPTH = 4  # nested calls of local functions interpreted with their arguments
MAX_RUNS_PER_FUNCTION = 6  # distinct argument sets interpreted per function
MAX_LOOP_PASSES = 3
# Methods of a module that are not calls of a submodule (``self.parameters()``).
NOT_SUBMODULES = lib.MODULE_SELF_METHODS | frozenset(lib.CAST_METHODS) | frozenset(
    "to type parameters named_parameters modules named_modules children named_children buffers state_dict "
    "load_state_dict register_buffer register_parameter zero_grad forward get_submodule".split()
)
ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.MatrixMultiply, cst.Modulo, cst.FloorDivide)


@dataclasses.dataclass
class ClassInfo:
    node: cst.ClassDef
    name: str
    is_module: bool
    bases: list[str]
    methods: dict[str, cst.FunctionDef] = dataclasses.field(default_factory=dict)
    attrs: dict[str, Value | None] = dataclasses.field(default_factory=dict)
    init_done: bool = False


@dataclasses.dataclass
class FunctionInfo:
    node: cst.FunctionDef
    cls: ClassInfo | None
    outer: "Frame"
    defaults: dict[str, Value | None]
    autocast: tuple  # AutocastInfo regions its decorators open


class Frame:
    __slots__ = ("env", "function", "cls", "outer", "autocast", "returns", "functions", "classes",
                 "params", "mutations", "depth", "loop_depth", "info", "conditioned")

    def __init__(self, function=None, cls=None, outer=None, autocast=(), depth=0, info=None) -> None:
        self.env: dict[str, Value | None] = {}
        self.function = function
        self.cls = cls
        self.outer = outer
        self.autocast = autocast
        self.returns: Value | None = None
        self.functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.params: dict[str, str | None] = {}  # parameter -> the caller's dotted name of the argument
        self.mutations: dict[str, Value | None] = {}  # in-place casts of names the caller sees
        self.depth = depth
        self.loop_depth = 0
        self.info = info
        # flag -> {name: (the joined value, when the flag is true, when false)} (see _remember)
        self.conditioned: dict[str, dict[str, tuple]] = {}


def _arg(call: cst.Call, keyword: str, position: int | None = None) -> cst.Arg | None:
    positional = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg
        elif not arg.star:
            if position is not None and positional == position:
                return arg
            positional += 1
    return None


_CATEGORY = {BOOL: 0, INT: 1}


def _zero_dim_promotion(dimensioned: str, zero: str) -> str:
    """torch's result for a dimensioned tensor of ``dimensioned`` and a 0-dim one of ``zero``: the
    dimensioned dtype unless the 0-dim one is of a higher category (bool < int < float)."""
    if _CATEGORY.get(zero, 2) > _CATEGORY.get(dimensioned, 2):
        return zero
    return dimensioned


def _number_kind(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.UnaryOperation):
        return _number_kind(node.expression)
    if isinstance(node, cst.Integer):
        return INT
    if isinstance(node, cst.Float):
        return FP32
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return BOOL
    return None


def _fill_kind(node: cst.BaseExpression) -> str | None:
    """The category of a fill value: a number literal, ``float(...)``/``int(...)``/``bool(...)``,
    ``math.inf``/``np.nan`` and ``torch.finfo(...).min`` (floats); None when the code does not say."""
    kind = _number_kind(node)
    if kind is not None:
        return kind
    if isinstance(node, cst.UnaryOperation):
        return _fill_kind(node.expression)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        return {"float": FP32, "int": INT, "bool": BOOL}.get(node.func.value)
    if isinstance(node, cst.Attribute):
        if node.attr.value in ("inf", "nan", "pi", "e") and dotted_name(node.value) in ("math", "np", "numpy", "torch"):
            return FP32
        if node.attr.value in ("min", "max", "eps", "tiny") and isinstance(node.value, cst.Call) \
                and (dotted_name(node.value.func) or "").endswith("finfo"):
            return FP32
    return None


def _literal_kinds(node: cst.BaseExpression, depth: int = 0) -> set[str] | None:
    """The element kinds of a nested list/tuple literal of numbers (None when not one)."""
    if depth > 6:
        return None
    if isinstance(node, (cst.List, cst.Tuple)):
        kinds: set[str] = set()
        for element in node.elements:
            if isinstance(element, cst.StarredElement):
                return None
            inner = _literal_kinds(element.value, depth + 1)
            if inner is None:
                return None
            kinds |= inner
        return kinds
    kind = _number_kind(node)
    return {kind} if kind else None


def _literal_category(kinds: set[str] | None) -> str | None:
    if not kinds:
        return None
    if FP32 in kinds:
        return FP32
    if INT in kinds:
        return INT
    return BOOL


def _string(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


class Interpreter:
    def __init__(self, ctx, dtype_defaults: bool = False) -> None:
        self.ctx = ctx
        # Run uncalled plain functions with their low dtype defaults (``def sample(dtype=torch.float16)``)
        # as one reachable configuration. Only for what calls pass on (project/call_sites.py): the
        # rules' own flow leaves those unknown (callers usually pass the dtype).
        self.dtype_defaults = dtype_defaults
        self.names = ctx.names
        self.flow = Flow()
        self.flow._parent = ctx.parent
        self._values = self.flow._values
        self._unknown: set[int] = set()
        # each node's value in the run that evaluated it last (``_values`` joins every run): what
        # an expression reads of the operands it just evaluated
        self._current: dict[int, Value | None] = {}
        self._origins: dict[int, Origin] = {}
        self._functions: list[FunctionInfo] = []
        self._runs: dict[int, int] = {}
        self._memo: dict[tuple, tuple] = {}
        self._active: list[int] = []
        self.default_float = FP32
        self._accelerate_autocast: str | None = None  # asked once, on the first prepare()
        self.module_frame = Frame()
        self._clock = 0
        self._cast_index: dict[int, int] = {}
        self._optimizer_index: dict[int, int] = {}
        self._scaler_nodes: set[int] = set()
        self._generic: set[int] = set()  # functions run with unknown parameters
        self._semantics_data = NOTHING  # torch's semantics for the file's target-torch, read on first use
        self._rewrites_globals: bool | None = None
        self._dtype_facts: dict[int, lowp_evidence.FunctionDtypeFacts] = {}  # per function, read once
        self._dtype_reads: list[int] | None = None  # walk numbers of the file's ``x.dtype`` reads
        self._contracts: dict[int, lowp_contract.Contract | None] = {}  # per class (facts/lowp_contract.py)
        self._relative: frozenset | None = None
        self._ranks = Ranks(ctx)  # which tensors the code shows 0-dim
        self._assigned_attrs: dict[int, dict[str, set]] = {}  # per class: attribute -> methods (not __init__) that set it

    # ---------------------------------------------------------------------------------------
    def run(self) -> Flow:
        self.flow._rerun = self.rerun
        self._block(self.ctx.module.body, self.module_frame)
        contexts = getattr(getattr(self.ctx, "worlds", None), "contexts", None)
        if contexts:
            # functions another file calls with risky dtypes: run under that call (project/contexts.py)
            for info in list(self._functions):
                context = contexts.get(self._project_key(info))
                if context is not None:
                    self._run_generic(info, context)
        # Functions no one called with known arguments: run them with unknown parameters. Plain
        # module-level functions last-defined first: a helper is usually defined above its
        # callers, and a caller's run hands it what it knows (``cache_latents(vae.float(), ...)``)
        # before a run that knows nothing would be joined into every value it records.
        plain = [info for info in self._functions if info.cls is None and info.outer is self.module_frame]
        order = [*reversed(plain), *(info for info in self._functions if not (info.cls is None and info.outer is self.module_frame))]
        known = len(self._functions)
        index = 0
        while index < len(order):
            info = order[index]
            index += 1
            if id(info.node) not in self._runs or (
                    id(info.node) not in self._generic and self._autocast_world_of(info) is not None):
                # (a method under a project autocast world runs under it even if this file called it)
                self._run_generic(info)
            if len(self._functions) > known:  # nested definitions the runs met
                order.extend(self._functions[known:])
                known = len(self._functions)
        return self.flow

    # -- bookkeeping --------------------------------------------------------------------------
    def origin(self, node: cst.CSTNode) -> Origin:
        found = self._origins.get(id(node))
        if found is None:
            found = self._origins[id(node)] = Origin(node, self._describe)
        return found

    def _evidence_origin(self, node: cst.CSTNode) -> lowp_evidence.EvidenceOrigin:
        key = ("evidence", id(node))
        found = self._origins.get(key)
        if found is None:
            found = self._origins[key] = lowp_evidence.EvidenceOrigin(node, self._describe)
        return found

    def _follows_origin(self, follows: lowp_evidence.Evidence) -> lowp_evidence.FollowsOrigin:
        key = ("follows", id(follows.node), follows.name)
        found = self._origins.get(key)
        if found is None:
            found = self._origins[key] = lowp_evidence.FollowsOrigin(follows.node, self._describe, follows.name)
        return found

    def _contract_of(self, cls: ClassInfo | None, frame: Frame, depth: int = 0) -> lowp_contract.Contract | None:
        """The library contract a class is under through its bases, in this file (lowp_contract.py)."""
        if cls is None or depth > 8:
            return None
        if id(cls.node) in self._contracts:
            return self._contracts[id(cls.node)]
        if self._relative is None:
            self._relative = lowp_contract.relative_imports(self.ctx.module)
        found = None
        for base in cls.node.bases:
            spelled = dotted_name(base.value) or ""
            found = lowp_contract.base_contract(spelled, self.names.qualified_names(base.value), self._relative)
            if found is None:
                known = self._find_class(spelled, frame)
                found = self._contract_of(known, frame, depth + 1) if known is not cls else None
            if found is not None:
                break
        self._contracts[id(cls.node)] = found
        return found

    def _contract_origin(self, node: cst.CSTNode, contract: lowp_contract.Contract,
                         name: str | None = None) -> lowp_evidence.ContractOrigin:
        key = ("contract", id(node))
        found = self._origins.get(key)
        if found is None:
            name = name if name is not None else node.name.value
            found = self._origins[key] = lowp_evidence.ContractOrigin(node, self._describe, name, contract.why)
        return found

    def _dtype_facts_of(self, frame: Frame) -> lowp_evidence.FunctionDtypeFacts | None:
        """The dtype tests and low-precision evidence of the function ``frame`` runs."""
        function = frame.function
        if function is None:
            return None
        found = self._dtype_facts.get(id(function))
        if found is None:
            if self._reads_a_dtype(function):
                found = lowp_evidence.facts_of(function, self._dtype_constant)
            else:  # every test, alias and cast back it could hold reads ``x.dtype``: nothing to find
                found = lowp_evidence.FunctionDtypeFacts({}, {}, {}, self._dtype_constant, {})
            self._dtype_facts[id(function)] = found
        return found

    def _reads_a_dtype(self, function: cst.FunctionDef) -> bool:
        """``x.dtype`` (a plain name's) is read somewhere in ``function``: one bisection in the
        file's sorted walk numbers of such reads, instead of a walk of every function the flow runs."""
        if self._dtype_reads is None:
            order = self.ctx.source_order
            # a plain name's, or an attribute chain's (``self.base_layer.weight.dtype``: lowp_evidence's chains)
            self._dtype_reads = [order(node)[0] for node in self.ctx.all_nodes if type(node) is cst.Attribute
                                 and node.attr.value == "dtype" and type(node.value) in (cst.Name, cst.Attribute, cst.Call)]
        try:
            enter, leave = self.ctx.source_order(function)
        except KeyError:  # not a node of this file's tree: read it
            return True
        index = bisect.bisect_right(self._dtype_reads, enter)
        return index < len(self._dtype_reads) and self._dtype_reads[index] < leave

    def _seeded(self, target: cst.Name, value: Value | None, frame: Frame) -> Value | None:
        """A binding of a name the function shows to be float16/bfloat16 (lowp_evidence.py)."""
        facts = self._dtype_facts_of(frame)
        evidence = facts.evidence.get(target.value) if facts is not None else None
        if evidence is not None and id(target) in evidence.seeds:
            return lowp_evidence.evidenced(value, self._evidence_origin(evidence.node))
        follows = facts.follows.get(target.value) if facts is not None else None
        if follows is not None and id(target) in follows.seeds:
            # a followed dtype fills only what nothing else tells (widen=False)
            return lowp_evidence.evidenced(value, self._follows_origin(follows),
                                           widen=False)
        return value

    def _narrow(self, frame: Frame, facts: lowp_evidence.FunctionDtypeFacts | None, tests: list) -> None:
        """In a branch of ``if x.dtype == torch.bfloat16:``: what the test says of ``x``, and of the
        values whose low dtypes came from the evidence on ``x`` (``w = x + dx``: where ``x`` is not
        bfloat16, neither is the bfloat16 ``w`` took from it)."""
        for test in tests:
            if test.name in frame.env:
                frame.env[test.name] = lowp_evidence.narrowed(frame.env[test.name], test)
            evidence = facts.evidence.get(test.name)
            if evidence is None:
                continue
            origin = self._evidence_origin(evidence.node)
            for key, value in list(frame.env.items()):
                if key != test.name and value is not None:
                    frame.env[key] = lowp_evidence.narrowed_along(value, test, origin)

    def _part_origin(self, node: cst.CSTNode) -> PartOrigin:
        """The origin of a dtype given to one submodule (``model.backbone.half()``)."""
        key = ("part", id(node))
        found = self._origins.get(key)
        if found is None:
            found = self._origins[key] = PartOrigin(node, self._describe)
        return found

    def _as_part(self, value: Value, node: cst.CSTNode) -> Value:
        """``value`` with its dtypes set at ``node`` on a part of a model."""
        origin = self._part_origin(node)
        return value.replace(origins=tuple((d, origin) for d, _ in value.origins))

    def _describe(self, node: cst.CSTNode) -> tuple[int, str]:
        line = self.ctx.position(node).start.line
        text = " ".join(self.ctx.code_for(node).split())
        if len(text) > 60 and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            # ``AutoModel.from_pretrained(...).half()``: the method is the interesting part.
            tail = " ".join("".join(self.ctx.module.code_for_node(a) for a in node.args).split())
            head, receiver = None, node.func.value
            while isinstance(receiver, (cst.Attribute, cst.Call)):
                if isinstance(receiver, cst.Call):
                    head = dotted_name(receiver.func) or head
                    receiver = receiver.func
                else:
                    receiver = receiver.value
            if head is not None:
                text = f"{head}(...)...{node.func.attr.value}({tail})"
        if len(text) > 60:
            text = text[:57] + "..."
        return line, text

    def _record(self, node: cst.CSTNode, value: Value | None) -> Value | None:
        key = id(node)
        old = self._values.get(key)
        if value is None:
            if old is not None:
                self._values[key] = join(old, None)
            else:
                self._unknown.add(key)
            return None
        if old is not None:
            self._values[key] = join(old, value)
        elif key in self._unknown:
            self._values[key] = join(None, value)
        else:
            self._values[key] = value
        return value

    def _region(self, statement: cst.CSTNode, frame: Frame) -> None:
        stacks = self.flow._regions.get(id(statement))
        if stacks is None:
            self.flow._regions[id(statement)] = (frame.autocast,)
        elif frame.autocast not in stacks:
            self.flow._regions[id(statement)] = stacks + (frame.autocast,)

    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    def _add_cast(self, cast: Cast) -> None:
        """One Cast per call node; a node run again (loop, second call) widens ``before``."""
        index = self._cast_index.get(id(cast.node))
        if index is None:
            self._cast_index[id(cast.node)] = len(self.flow.module_casts)
            self.flow.module_casts.append(cast)
            return
        old = self.flow.module_casts[index]
        self.flow.module_casts[index] = dataclasses.replace(
            old, before=join(old.before, cast.before), dtypes=old.dtypes | cast.dtypes
        )

    def _add_optimizer(self, info: OptimizerInfo) -> OptimizerInfo:
        index = self._optimizer_index.get(id(info.node))
        if index is None:
            self._optimizer_index[id(info.node)] = len(self.flow.optimizers)
            self.flow.optimizers.append(info)
            return info
        old = self.flow.optimizers[index]
        merged = dataclasses.replace(old, params=join(old.params, info.params),
                                     target=old.target if old.target == info.target else old.target or info.target)
        self.flow.optimizers[index] = merged
        return merged

    # -- environment --------------------------------------------------------------------------
    def lookup(self, key: str, frame: Frame) -> tuple[bool, Value | None]:
        current: Frame | None = frame
        while current is not None:
            if key in current.env:
                return True, current.env[key]
            if current.cls is not None and key.startswith("self."):
                attr = key[5:]
                if attr in current.cls.attrs and "." not in attr:
                    value = current.cls.attrs[attr]
                    if value is not None and current.cls.is_module and value.kind == TENSOR and value.role == "param" \
                            and self._world_of(current.cls) is not None:
                        # under a precision world, the module's parameters have the world's dtype
                        owner = current.env.get("self")
                        if owner is not None and owner.kind == MODULE and owner.dtypes:
                            value = value.replace(dtypes=owner.dtypes, origins=owner.origins, partial=owner.partial)
                    if value is not None and current.cls.is_module and value.kind == MODULE:
                        value = self._world_part(current.cls, attr, value)
                        # A whole-model cast changes submodules: they have the dtype of the
                        # instance this method runs on when the caller's is known, else unknown.
                        # A part keeps its own dtype (``dtype=`` at construction, a cast of the
                        # attribute) unless the whole model was cast.
                        owner = current.env.get("self")
                        keep = not _whole_low(owner)
                        if part_dtypes(value) and keep:
                            if owner is None or owner.kind != MODULE or not owner.dtypes:
                                value = value.replace(partial=True)
                        elif owner is not None and owner.kind == MODULE and owner.dtypes:
                            value = _retyped(value, owner.dtypes, owner.origins, owner.partial, keep)
                        else:
                            value = _retyped(value, frozenset(), (), False, keep)
                    elif value is not None and current.cls.is_module and value.kind == TENSOR and value.dtypes \
                            and value.dtypes <= FLOATS and value.role in ("param", "buffer"):
                        # Floating buffers (``register_buffer("inv_freq", ...)``) follow a whole-model
                        # ``.to(torch.bfloat16)`` / ``.half()`` like parameters do; a plain tensor
                        # attribute (``self.class_weights = torch.tensor(w)``) does not.
                        owner = current.env.get("self")
                        if owner is not None and owner.kind == MODULE and owner.dtypes & LOW:
                            value = value.replace(dtypes=owner.dtypes, origins=owner.origins, partial=owner.partial)
                    return True, value
                return False, None
            current = current.outer
        return False, None

    def assign(self, key: str, value: Value | None, frame: Frame) -> None:
        env = frame.env
        prefix = key + "."
        for existing in [k for k in env if k.startswith(prefix)]:
            del env[existing]
        env[key] = value

    def mutate(self, key: str, value: Value | None, frame: Frame) -> None:
        """An in-place change (``model.half()``) the caller of this frame also sees."""
        env = frame.env
        env[key] = value
        prefix = key + "."
        if value is not None and "." in key and part_dtypes(value):
            # the model that holds the part now mixes dtypes (``model.vision.half()``)
            holder = key.rsplit(".", 1)[0]
            held = env.get(holder)
            if held is not None and held.kind == MODULE:
                env[holder] = held.replace(parts=merge_parts(held.parts, _low_parts(value)))
        if value is not None:
            for existing in [k for k in env if k.startswith(prefix)]:
                sub = env[existing]
                if sub is not None and sub.kind == MODULE:
                    env[existing] = _retyped(sub.with_dtypes(value.dtypes, value.origin, partial=value.partial),
                                             value.dtypes, sub.with_dtypes(value.dtypes, value.origin).origins,
                                             value.partial)
        if frame.function is not None:
            head = key.split(".", 1)[0]
            if head in frame.params or head not in frame.env or head == "self":
                frame.mutations[key] = lowp_evidence.without_evidence(value)

    @staticmethod
    def join_env(a: dict, b: dict) -> dict:
        out = dict(a)
        for key, value in b.items():
            if key in out:
                if out[key] is not value:
                    out[key] = join(out[key], value)
            else:
                out[key] = value
        return out

    # -- statements ---------------------------------------------------------------------------
    def _block(self, statements, frame: Frame) -> bool:
        """Run statements; False when the block never falls through (return/raise/...)."""
        for statement in statements:
            if not self._statement(statement, frame):
                return False
        return True

    def _body(self, suite, frame: Frame) -> bool:
        if isinstance(suite, cst.IndentedBlock):
            return self._block(suite.body, frame)
        if isinstance(suite, cst.SimpleStatementSuite):
            self._region(suite, frame)
            for small in suite.body:
                if not self._small(small, frame):
                    return False
        return True

    def _statement(self, node: cst.CSTNode, frame: Frame) -> bool:
        self._region(node, frame)
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                if not self._small(small, frame):
                    return False
            return True
        if isinstance(node, cst.If):
            return self._if(node, frame)
        if isinstance(node, (cst.For, cst.While)):
            self._loop(node, frame)
            return True
        if isinstance(node, cst.With):
            return self._with(node, frame)
        if isinstance(node, cst.FunctionDef):
            self._define_function(node, frame)
            return True
        if isinstance(node, cst.ClassDef):
            self._define_class(node, frame)
            return True
        if isinstance(node, cst.Try) or type(node).__name__ == "TryStar":
            return self._try(node, frame)
        if isinstance(node, cst.Match):
            self.ev(node.subject, frame)
            before = frame.env
            result = dict(before)
            for case in node.cases:
                frame.env = dict(before)
                self._body(case.body, frame)
                result = self.join_env(result, frame.env)
            frame.env = result
            return True
        return True

    def _small(self, node: cst.CSTNode, frame: Frame) -> bool:
        if isinstance(node, cst.Expr):
            self.ev(node.value, frame, statement=True)
        elif isinstance(node, cst.Assign):
            value = self.ev(node.value, frame)
            for target in node.targets:
                self._bind(target.target, value, frame, node.value)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                value = self.ev(node.value, frame)
                self._bind(node.target, value, frame, node.value)
        elif isinstance(node, cst.AugAssign):
            self._aug_assign(node, frame)
        elif isinstance(node, cst.Return):
            value = self.ev(node.value, frame) if node.value is not None else None
            value = lowp_evidence.without_evidence(value)  # the evidence is the function's own: it stays in it
            frame.returns = value if frame.info is None else join(frame.returns, value)
            frame.info = True  # it has returned at least once
            return False
        elif isinstance(node, cst.Raise):
            if node.exc is not None:
                self.ev(node.exc, frame)
            return False
        elif isinstance(node, (cst.Break, cst.Continue)):
            return False
        elif isinstance(node, cst.Assert):
            self.ev(node.test, frame)
            facts = self._dtype_facts_of(frame)
            if facts is not None:  # ``assert x.dtype == torch.float32``: it holds from here on
                self._narrow(frame, facts, facts.tests(node.test)[0])
        elif isinstance(node, cst.Del):
            key = dotted_name(node.target) if isinstance(node.target, (cst.Name, cst.Attribute)) else None
            if key:
                frame.env.pop(key, None)
        return True

    def _if(self, node: cst.If, frame: Frame) -> bool:
        self.ev(node.test, frame)
        decided = self._decided(node.test, frame)
        if decided is True:
            return self._body(node.body, frame)
        if decided is False:
            orelse = node.orelse
            if isinstance(orelse, cst.If):
                self._region(orelse, frame)
                return self._if(orelse, frame)
            return self._body(orelse.body, frame) if isinstance(orelse, cst.Else) else True
        before = frame.env
        flag = _flag_of(node.test)
        facts = self._dtype_facts_of(frame)
        body_tests, else_tests = facts.tests(node.test, node) if facts is not None else ([], [])
        frame.env = dict(before)
        self._refine(frame, flag, True)
        self._narrow(frame, facts, body_tests)
        body_falls = self._body(node.body, frame)
        body_env = frame.env
        frame.env = dict(before)
        self._refine(frame, flag, False)
        self._narrow(frame, facts, else_tests)
        orelse = node.orelse
        if isinstance(orelse, cst.If):
            self._region(orelse, frame)
            else_falls = self._if(orelse, frame)
        elif isinstance(orelse, cst.Else):
            else_falls = self._body(orelse.body, frame)
        else:
            else_falls = True
        else_env = frame.env
        if body_falls and else_falls:
            frame.env = self.join_env(body_env, else_env)
            self._remember(frame, flag, before, body_env, else_env)
        elif body_falls:
            frame.env = body_env
        elif else_falls:
            frame.env = else_env
        else:
            frame.env = self.join_env(body_env, else_env)
            return False
        return True

    @staticmethod
    def _remember(frame: Frame, flag, before: dict, body_env: dict, else_env: dict) -> None:
        """After ``if flag: model = model.half()``: what each name the two branches set differently
        holds when the flag is true and when it is false, so a later test of the same flag
        (``params = master if flag else model.parameters()``) sees the matching side."""
        if flag is None:
            return
        table = frame.conditioned.setdefault(flag[0], {})
        for key in set(body_env) & set(else_env):
            when_test, otherwise = body_env[key], else_env[key]
            if when_test is otherwise or key not in frame.env:
                continue
            if key not in before and (when_test is None or otherwise is None):
                continue
            table[key] = (frame.env[key], when_test, otherwise) if flag[1] else (frame.env[key], otherwise, when_test)

    @staticmethod
    def _refine(frame: Frame, flag, test_true: bool) -> None:
        """In a branch of ``if flag`` / ``x if flag else y``: the names an earlier test of the same
        flag set, as they are on this side (while nothing has reassigned them since)."""
        table = frame.conditioned.get(flag[0]) if flag is not None else None
        if not table:
            return
        flag_value = flag[1] if test_true else not flag[1]
        for key, (joined, when_true, when_false) in table.items():
            if frame.env.get(key) is joined:
                frame.env[key] = when_true if flag_value else when_false

    def _decided(self, test: cst.BaseExpression, frame: Frame) -> bool | None:
        """The outcome of ``x is None`` / ``x is not None`` / ``x`` / ``not x`` when ``x`` holds a
        value known on every path (a caller's ``dtype_override=torch.bfloat16``, a tensor), else None:
        ``if dtype_override is not None: x = x.to(dtype_override)`` then runs one branch."""
        negate = False
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, negate = test.expression, not negate
        kinds = (DTYPE,)  # ``if x:`` is decided for a dtype only (a tensor's truth is its value)
        outcome = True
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            target = test.comparisons[0]
            if not (isinstance(target.operator, (cst.Is, cst.IsNot)) and isinstance(target.comparator, cst.Name)
                    and target.comparator.value == "None"):
                return None
            outcome = isinstance(target.operator, cst.IsNot)
            test, kinds = test.left, (DTYPE, TENSOR, NUMPY, MODULE)
        if not isinstance(test, (cst.Name, cst.Attribute)):
            return None
        key = dotted_name(test)
        if key is None:
            return None
        # the value in this run (the recorded one joins every run of the node)
        found, value = self.lookup(key, frame)
        if found and key.startswith("self.") and key not in frame.env and self._rebound_elsewhere(key[5:], frame):
            return None  # ``self.num_inference_steps = None`` in __init__, set by set_timesteps(): either
        if found and value is not None and value.kind == CONST and not value.partial and self._constants_hold():
            # a flag the program writes (``use_lora = False``): the branch it takes
            if kinds == (DTYPE,):
                truth = bool(value.info)  # ``if use_lora:``
            else:
                truth = (value.info is not None) == outcome  # ``if x is None:`` / ``is not None``
            return truth != negate
        if not found or value is None or value.partial or not value.dtypes or value.kind not in kinds:
            constant = self.ctx.bindings.constant_bool(key) if kinds == (DTYPE,) and isinstance(test, cst.Name) \
                and self._constants_hold() else None
            return None if constant is None else constant != negate  # ``use_lora = False``
        return outcome != negate

    def _rebound_elsewhere(self, attr: str, frame: Frame) -> bool:
        """``self.attr`` is assigned by a method of the class other than ``__init__`` and the one
        ``frame`` runs: in a method, the value ``__init__`` gave it is only one of its values."""
        cls = frame.cls
        if cls is None or "." in attr:
            return False
        assigned = self._assigned_attrs.get(id(cls.node))
        if assigned is None:
            assigned = self._assigned_attrs[id(cls.node)] = {}
            for name, method in cls.methods.items():
                if name == "__init__":
                    continue
                for node in walk(method):
                    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else \
                        [node.target] if isinstance(node, (cst.AugAssign, cst.AnnAssign)) else []
                    for t in targets:
                        if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                            assigned.setdefault(t.attr.value, set()).add(id(method))
        return bool(assigned.get(attr, set()) - {id(frame.function)})

    def _constants_hold(self) -> bool:
        """Whether a written flag is the value the program runs with: not in a script that
        rewrites its globals (nanoGPT's ``exec(open('configurator.py').read())``)."""
        if self._rewrites_globals is None:
            text = self.ctx.text
            self._rewrites_globals = "exec(" in text or "globals()" in text
        return not self._rewrites_globals

    def _loop(self, node: cst.For | cst.While, frame: Frame) -> None:
        if isinstance(node, cst.For):
            iterated = self.ev(node.iter, frame)
            element = self._element(iterated, node.iter)
        else:
            self.ev(node.test, frame)
            element = None
        before = frame.env
        frame.loop_depth += 1
        passes = MAX_LOOP_PASSES if frame.loop_depth <= 2 else 1
        start = before
        end = before
        for _ in range(passes):
            frame.env = dict(start)
            if isinstance(node, cst.For):
                self._bind(node.target, element, frame, None)
            self._body(node.body, frame)
            if isinstance(node, cst.While):
                self.ev(node.test, frame)
            new_end = self.join_env(before, frame.env)
            if new_end == end:
                end = new_end
                break
            end = new_end
            start = end
        frame.loop_depth -= 1
        frame.env = end
        if node.orelse is not None:
            self._body(node.orelse.body, frame)

    def _with(self, node: cst.With, frame: Frame) -> bool:
        pushed = 0
        saved = frame.autocast
        for item in node.items:
            value = self.ev(item.item, frame)
            if value is not None and value.kind == AUTOCAST and value.info is not None:
                frame.autocast = frame.autocast + (value.info,)
                pushed += 1
            if item.asname is not None:
                self._bind(item.asname.name, value, frame, item.item)
        falls = self._body(node.body, frame)
        frame.autocast = saved
        return falls

    def _try(self, node, frame: Frame) -> bool:
        before = dict(frame.env)
        falls = self._body(node.body, frame)
        if node.orelse is not None and falls:
            falls = self._body(node.orelse.body, frame)
        result = frame.env if falls else None
        for handler in node.handlers:
            frame.env = self.join_env(before, frame.env if result is None else result)
            if handler.type is not None:
                self.ev(handler.type, frame)
            if self._body(handler.body, frame):
                result = frame.env if result is None else self.join_env(result, frame.env)
        frame.env = result if result is not None else before
        if node.finalbody is not None:
            self._body(node.finalbody.body, frame)
        return result is not None

    def _aug_assign(self, node: cst.AugAssign, frame: Frame) -> None:
        right = self.ev(node.value, frame)
        left = self.ev(node.target, frame)
        key = dotted_name(node.target) if isinstance(node.target, (cst.Name, cst.Attribute)) else None
        if key is None:
            return
        if left is not None and left.kind in (TENSOR, NUMPY):
            return  # in place: the left keeps its dtype
        if isinstance(node.operator, cst.AddAssign) and left is not None and right is not None \
                and left.kind in (TUPLE, PARAMS) and right.kind in (TUPLE, PARAMS):
            # ``params += list(head.parameters())``: the list grows in place (any number of times in a loop)
            grown = _concatenated([left, right], left.info if left.kind == TUPLE else None)
            if grown is not None and grown.kind == TUPLE and grown.items is not None:
                grown = make(TUPLE, element=_joined(grown.items), info="list")
            self._store(key, grown, frame)
            return
        if right is not None and right.kind in (TENSOR, NUMPY):
            self.assign(key, right, frame)
        else:
            self.assign(key, None, frame)

    def _bind(self, target: cst.BaseExpression, value: Value | None, frame: Frame, source) -> None:
        if isinstance(target, cst.Name):
            value = self._seeded(target, value, frame)
            self.assign(target.value, value, frame)
            self._record(target, value)
        elif isinstance(target, cst.Attribute):
            parent = self.ev(target.value, frame)
            key = dotted_name(target)
            self._replace_parameter(target, value, frame)
            if key:
                self.assign(key, value, frame)
                if frame.function is not None and key.startswith("self."):
                    frame.mutations[key] = lowp_evidence.without_evidence(value)
                if (
                    parent is not None and parent.kind == MODULE and value is not None
                    and value.kind == MODULE and value.dtypes and parent.dtypes
                    and value.dtypes != parent.dtypes
                ):
                    # A fp32 head added to a half model: the model now holds both dtypes.
                    parent_key = dotted_name(target.value)
                    mixed = join(parent, value).replace(partial=True)
                    if parent_key:
                        frame.env[parent_key] = mixed
            self._record(target, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e for e in target.elements]
            items = value.items if value is not None and value.kind == TUPLE and value.info not in ITERATORS else None
            star = next((i for i, e in enumerate(elements) if isinstance(e, cst.StarredElement)), None)
            for index, element in enumerate(elements):
                if isinstance(element, cst.StarredElement):
                    rest = None
                    if items is not None and len(items) >= len(elements) - 1:
                        rest = make(TUPLE, items=items[index:len(items) - (len(elements) - index - 1)], info="list")
                    elif value is not None and value.kind == TUPLE and value.element is not None and items is None:
                        rest = make(TUPLE, element=value.element, info="list")
                    self._bind(element.value, rest, frame, None)
                    continue
                position = index if star is None or index < star else (len(items) - (len(elements) - index) if items is not None else -1)
                item = items[position] if items is not None and 0 <= position < len(items) else None
                if items is None and value is not None and value.kind == TENSOR and value.certain and _splits(source):
                    item = value  # ``q, k, v = x.chunk(3)``: the pieces of a tensor keep its dtype
                elif items is None and value is not None and value.kind == TUPLE and value.info not in ITERATORS \
                        and value.element is not None and value.element.kind == TENSOR:
                    item = value.element  # ``q, k = (t.transpose(1, 2) for t in (q, k))``: any of them
                self._bind(element.value, item, frame, None)
        elif isinstance(target, cst.Subscript):
            held = self.ev(target.value, frame)
            for element in target.slice:
                if isinstance(element.slice, cst.Index):
                    self.ev(element.slice.value, frame)
            key = dotted_name(target.value) if isinstance(target.value, (cst.Name, cst.Attribute)) else None
            if key is not None and held is not None and held.kind in (MAPPING, TUPLE) and len(target.slice) == 1 \
                    and isinstance(target.slice[0].slice, cst.Index) and not isinstance(held.info, checkpoints.LoadedCheckpoint):
                self._store(key, _stored(held, target.slice[0].slice.value, value), frame)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, None, frame, None)

    def _replace_parameter(self, target: cst.Attribute, value: Value | None, frame: Frame) -> None:
        """``layer.weight.data = t`` / ``layer.weight = nn.Parameter(t)``: the layer's weights are now
        ``t``'s dtype (no cast, unlike ``copy_`` or ``load_state_dict``); a submodule so changed is
        a part of its model with a dtype of its own."""
        held = target.value if target.attr.value == "data" else target
        if not (isinstance(held, cst.Attribute) and held.attr.value in ("weight", "bias")):
            return
        if value is None or value.kind != TENSOR or not value.dtypes or not value.dtypes <= FLOATS or value.partial:
            return
        module_key = dotted_name(held.value)
        module = self._current.get(id(held.value))
        if module_key is None or module is None or module.kind != MODULE or module.dtypes == value.dtypes:
            return
        changed = module.with_dtypes(value.dtypes, self.origin(target))
        if "." in module_key:
            changed = self._as_part(changed, target)
        self.mutate(module_key, changed, frame)

    def _made_one_dim(self, tensor: Value) -> bool:
        """``tensor`` comes from a 1-D factory (``torch.logspace(...)``): its elements are 0-dim
        and promote nothing they meet (facts/flow/tensor_rank.py), so they are left unknown."""
        for _, origin in tensor.origins:
            node = getattr(origin, "node", None)
            if isinstance(node, cst.Call) and isinstance(node.func, (cst.Name, cst.Attribute)) \
                    and any(q in ONE_D_FACTORIES for q in self.names.qualified_names(node.func)):
                return True
        return False

    def _element(self, iterated: Value | None, node: cst.BaseExpression) -> Value | None:
        """What one iteration of ``for target in node`` binds."""
        if iterated is None:
            return None
        if iterated.kind == PARAMS:
            param = make(TENSOR, iterated.dtypes, iterated.origin, role="param", target=iterated.target)
            param = param.replace(partial=iterated.partial, origins=iterated.origins)
            if iterated.info == "named":
                return make(TUPLE, items=(None, param))
            return param
        if iterated.kind == TUPLE and iterated.items is not None:
            if iterated.info in ("enumerate", "zip", "items"):
                return iterated.element
            joined = None
            for index, item in enumerate(iterated.items):
                joined = item if index == 0 else join(joined, item)
            return joined
        if iterated.kind == MODULE and iterated.items is not None:
            return _joined(iterated.items)  # ``for block in self.blocks``
        if hf_datasets.table_of(iterated) is not None:
            return hf_datasets.row(iterated)  # ``for example in dataset``: a row of Python objects
        if iterated.kind == TENSOR and iterated.dtypes and iterated.role is None and not self._made_one_dim(iterated):
            return iterated.replace(items=None, element=None)  # ``for mask in masks``: its rows, same dtype
        if iterated.element is not None:
            return iterated.element
        return None

    # -- functions and classes -----------------------------------------------------------------
    def _decorator_autocast(self, node: cst.FunctionDef, frame: Frame) -> tuple:
        regions = ()
        for decorator in node.decorators:
            expr = decorator.decorator
            info = amp.autocast_info(self.names, expr)
            if info is None and not isinstance(expr, cst.Call) and self.names.matches(expr, *amp.AUTOCAST):
                info = amp.AutocastInfo(device=None, dtype=None, enabled=True, node=None)
            if info is not None:
                regions = regions + (info,)
        return regions

    def _define_function(self, node: cst.FunctionDef, frame: Frame, cls: ClassInfo | None = None) -> FunctionInfo:
        defaults: dict[str, Value | None] = {}
        for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            if param.default is not None:
                defaults[param.name.value] = self.ev(param.default, frame)
        for decorator in node.decorators:
            self.ev(decorator.decorator, frame)
        info = FunctionInfo(node, cls, frame, defaults, self._decorator_autocast(node, frame))
        if cls is None:
            frame.functions[node.name.value] = info
            frame.env.pop(node.name.value, None)
        self._functions.append(info)
        return info

    def _define_class(self, node: cst.ClassDef, frame: Frame) -> None:
        bases: list[str] = []
        is_module = False
        for base in node.bases:
            self.ev(base.value, frame)
            qualified = self.names.qualified_names(base.value)
            spelled = dotted_name(base.value) or ""
            bases.append(spelled)
            known = self._find_class(spelled, frame)
            if known is not None and known.is_module:
                is_module = True
            if any(lib.MODULE_BASES.search(q) for q in qualified) or lib.MODULE_BASES.search(spelled):
                is_module = True
        cls = ClassInfo(node, node.name.value, is_module, bases)
        frame.classes[cls.name] = cls
        frame.env.pop(cls.name, None)
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        for statement in body:
            if isinstance(statement, cst.FunctionDef):
                cls.methods[statement.name.value] = statement
                self._define_function(statement, frame, cls)
        # Inherit attributes and methods of user base classes (first base wins, like the MRO).
        for spelled in bases:
            base = self._find_class(spelled, frame)
            if base is not None:
                for name, method in base.methods.items():
                    cls.methods.setdefault(name, method)

    def _find_class(self, name: str, frame: Frame) -> ClassInfo | None:
        current: Frame | None = frame
        while current is not None:
            if name in current.classes:
                return current.classes[name]
            current = current.outer
        return self.module_frame.classes.get(name) if frame is not self.module_frame else None

    def _find_function(self, name: str, frame: Frame) -> FunctionInfo | None:
        current: Frame | None = frame
        while current is not None:
            if name in current.functions:
                return current.functions[name]
            if name in current.env:
                return None
            current = current.outer
        return None

    def _function_info(self, node: cst.FunctionDef) -> FunctionInfo | None:
        for info in self._functions:
            if info.node is node:
                return info
        return None

    def _local_forward(self, class_name: str, frame: Frame) -> FunctionInfo | None:
        if not class_name or "." in class_name:
            return None
        cls = self._find_class(class_name, frame)
        if cls is None or not cls.is_module or "forward" not in cls.methods:
            return None
        return self._function_info(cls.methods["forward"])

    def _instance(self, cls: ClassInfo, origin: Origin | None) -> Value:
        if cls.is_module:
            return make(MODULE, (self.default_float,), origin, info=cls.name)
        return make(INSTANCE, info=cls.name)

    def _project_key(self, info: FunctionInfo) -> str | None:
        """``ssim`` / ``Processor.forward``: how the project pass names a top-level function or a
        method of a top-level class; None for nested definitions."""
        if info.outer is not self.module_frame:
            return None
        name = info.node.name.value
        if info.cls is None:
            return name if self.module_frame.functions.get(name) is info else None
        return f"{info.cls.name}.{name}" if self.module_frame.classes.get(info.cls.name) is info.cls else None

    def _run_generic(self, info: FunctionInfo, context=None) -> None:
        """Run a function no call of this file reached, with unknown parameters, or with the
        values a caller in another file passes (``context``, a seeding.CallContext)."""
        self._generic.add(id(info.node))
        cls = info.cls
        if cls is not None and info.node.name.value != "__init__" and not cls.init_done:
            init = cls.methods.get("__init__")
            init_info = self._function_info(init) if init is not None else None
            if init_info is not None and id(init_info.node) not in self._runs:
                self._run_generic(init_info)
        bound: dict[str, tuple[Value | None, str | None, dict]] = {}
        params = info.node.params.params
        if cls is not None and params and not any(
            isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in info.node.decorators
        ):
            self_value = self._instance(cls, None)
            if cls.is_module:
                self_value = self_value.replace(dtypes=frozenset(), origins=())
            arguments = self._arguments_of(cls) if info.node.name.value == "__init__" else None
            for param in params[1:] if arguments else ():
                given = arguments.get(param.name.value)
                if given is not None:
                    # a caller elsewhere in the project builds the class with this low dtype
                    bound[param.name.value] = (argument_value(given, info.node, self.origin), None, {})
            worlds = getattr(self.ctx, "worlds", None)
            results = worlds.argument_values.get(cls.name) if worlds is not None \
                and info.node.name.value == "__init__" else None
            for param in params[1:] if results else ():
                given = results.get(param.name.value)
                if given:
                    # a caller elsewhere passes a project function's result (``class_weights=weights(y)``)
                    bound[param.name.value] = (result_value(given, info.node, self.origin), None, {})
            # ``__init__`` builds the instance before anything casts it (``Model().half()``, a
            # ``self.to(bf16)`` at its end): a precision world says nothing of what it builds or
            # of its arguments (settings, not activations)
            world = self._world_of(cls) if info.node.name.value != "__init__" else None
            if world is None and self._parts_of(cls) is not None:
                # only parts of the class are cast in the project: the rest of it is float32
                self_value = self._instance(cls, None)
            callback = self._callback_world(cls, info.node.name.value) if world is None else None
            if world is not None or callback is not None:
                # a precision world of the project pass: the class is cast elsewhere (see project/),
                # or a framework calls this method with low-precision tensors (``self`` is its own)
                module, tensor = world_values(world or callback, info.node, self.origin, cls.name)
                if world is not None:
                    self_value = module
                for param in params[1:]:
                    if world_tensor_parameter(param):
                        bound[param.name.value] = (tensor, None, {})
            bound[params[0].name.value] = (self_value, None, {})
        passed = self._parameters_of(info) if cls is None else None
        for name, world in (passed or {}).items():
            # a caller in another file gives this helper an instance its class's ``__init__`` casts
            bound[name] = (returned_value(world, info.node, self.origin), None, {})
        bound_world = self._bound_world(info) if cls is None else None
        if bound_world is not None and params:
            # monkeypatched in as the forward of a model's modules: ``self`` is one of them
            module, tensor = world_values(bound_world, info.node, self.origin, None)
            bound[params[0].name.value] = (module, None, {})
            for param in params[1:]:
                if world_tensor_parameter(param):
                    bound[param.name.value] = (tensor, None, {})
        for param in (*info.node.params.params, *info.node.params.kwonly_params):
            typed = self._annotated_module(param, info.outer or self.module_frame)
            if typed is not None and param.name.value not in bound:
                # ``embedder: CameraEmbedding``: an instance of a class of this file (a module is
                # float32 as built, unless a caller cast it: partial)
                bound[param.name.value] = (typed, None, {})
        under = self._autocast_world_of(info)
        if under is not None and under.activations:
            # a submodule of a model under autocast: its inputs are what the model's layers made
            for param in params[1:] if cls is not None else params:
                if world_tensor_parameter(param) and param.name.value not in bound:
                    bound[param.name.value] = (activation(under, info.node, self.origin), None, {})
        for name, default in info.defaults.items():
            if default is not None and default.kind == DTYPE and default.dtypes and (
                    cls is not None and info.node.name.value == "__init__" or cls is None and self._casts_modules(info)):
                    # ``def __init__(self, dtype=torch.float16)``: an object built without the
                    # argument runs in the default, one reachable configuration among unknown
                    # others (partial). So does a plain function's default it casts a module to
                    # (``def train(unet, weight_dtype=torch.float16): unet.to(dtype=weight_dtype)``);
                    # other defaults stay unknown: callers usually pass the dtype, and
                    # data-dependent numerics rules would guess.
                    bound.setdefault(name, (join(default, None), None, {}))
        if self.dtype_defaults and cls is None:
            for name, default in info.defaults.items():
                if default is not None and default.kind == DTYPE and default.dtypes & LOW:
                    bound.setdefault(name, (join(default, None), None, {}))
        autocast = ()
        if context is not None:
            words = f"the call at {context.where(posixpath.dirname(self.ctx.path))}"
            for parameter in context.args:
                bound[parameter[0]] = (context_value(parameter, info.node, self.origin, words), None, {})
            if context.autocast:
                enabled = None if context.autocast_conditional else True
                autocast = (amp.AutocastInfo(device=None, dtype=LONG_NAMES[context.autocast], enabled=enabled),)
        if under is not None:
            autocast = (under.info(),) + autocast  # the project's region, and the caller's inside it
        self._invoke(info, bound, self.module_frame if info.outer is None else info.outer, autocast, generic=True)

    def _autocast_world_of(self, info: FunctionInfo):
        """The autocast region the project pass found a method (or a module-level function) runs
        under when called from elsewhere (see project/worlds.py), or None."""
        worlds = getattr(self.ctx, "worlds", None)
        if worlds is None:
            return None
        name = info.node.name.value
        if info.cls is not None:
            world = worlds.autocast.get(info.cls.name) if info.cls.is_module else None
            return world if world is not None and world.runs(name) else None
        return worlds.autocast_functions.get(name) if info.outer is self.module_frame else None

    def _casts_modules(self, info: FunctionInfo) -> bool:
        """Whether the function casts a module-like name to one of its parameters (``unet.to(dtype=weight_dtype)``)."""
        params = {p.name.value for p in info.node.params.params}
        for node in walk(info.node.body):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "to" \
                    and _looks_like_module(node.func.value):
                if any(isinstance(a.value, cst.Name) and a.value.value in params for a in node.args):
                    return True
        return False

    def _annotated_module(self, param: cst.Param, frame: Frame) -> Value | None:
        annotation = param.annotation.annotation if param.annotation is not None else None
        if not isinstance(annotation, cst.Name):
            return None
        cls = self._find_class(annotation.value, frame)
        if cls is None:
            return None
        instance = self._instance(cls, None)
        return instance.replace(partial=True) if cls.is_module else instance

    def rerun(self, function: cst.FunctionDef, given: dict[str, Value]) -> Value | None:
        """What ``function`` returns to a caller that passes ``given`` (parameter -> value) and
        leaves the other parameters unknown or at their defaults. The facts are left as they were."""
        info = self._function_info(function)
        if info is None:
            return None
        bound: dict[str, tuple] = {name: (value, None, {}) for name, value in info.defaults.items()}
        params = function.params.params
        if info.cls is not None and params and not _is_static(function):
            instance = self._instance(info.cls, None)
            bound[params[0].name.value] = (instance.replace(dtypes=frozenset(), origins=()), None, {})
        for name, value in given.items():
            bound[name] = (value, None, {})
        # a fresh record (a node's recorded value joins all its runs, and this run must see its
        # own), and the facts as they were: the run leaves nothing behind for the rules
        flow = self.flow
        saved = (self._values, self._unknown, list(flow.module_casts), dict(self._cast_index), list(flow.optimizers),
                 dict(self._optimizer_index), list(flow.scalers), set(self._scaler_nodes), dict(self._runs),
                 {key: dataclasses.replace(summary) for key, summary in flow._summaries.items()},
                 dict(flow._regions))
        self._values, self._unknown = {}, set()
        try:
            # shallow: the helpers it calls are followed one level down, not four (the cost of a
            # rerun stays near that of one run of its own body)
            returns, _, _ = self._invoke(info, bound, Frame(depth=MAX_DEPTH - 2), (), generic=True)
        finally:
            (self._values, self._unknown, flow.module_casts, self._cast_index, flow.optimizers, self._optimizer_index,
             flow.scalers, self._scaler_nodes, self._runs, flow._summaries, flow._regions) = saved
            flow._values = self._values
        return returns

    def _world_of(self, cls: ClassInfo):
        """The precision world a module class runs in (the project pass's), or None."""
        worlds = getattr(self.ctx, "worlds", None)
        world = worlds.classes.get(cls.name) if worlds is not None and cls.is_module else None
        return world if world is not None and not world.methods else None

    def _parameters_of(self, info: FunctionInfo) -> dict | None:
        """Parameter -> world, for a module-level function callers in other files pass cast instances."""
        worlds = getattr(self.ctx, "worlds", None)
        if worlds is None or info.outer is not None and info.outer is not self.module_frame:
            return None
        return worlds.parameters.get(info.node.name.value)

    def _callback_world(self, cls: ClassInfo, method: str):
        """The world of a class whose ``method`` a framework calls with low-precision tensors."""
        worlds = getattr(self.ctx, "worlds", None)
        world = worlds.classes.get(cls.name) if worlds is not None else None
        return world if world is not None and method in world.methods else None

    def _bound_world(self, info: FunctionInfo):
        worlds = getattr(self.ctx, "worlds", None)
        functions = getattr(worlds, "functions", None) if worlds is not None else None
        if not functions or not (info.outer is None or info.outer is self.module_frame):
            return None
        return functions.get(info.node.name.value)

    def _parts_of(self, cls: ClassInfo) -> dict | None:
        """attribute -> PartWorld: the class's submodules the project casts apart (``model.backbone.half()``)."""
        worlds = getattr(self.ctx, "worlds", None)
        parts = getattr(worlds, "parts", None) if worlds is not None else None
        # (an empty dict: a class the parted ones hold, float32 with them)
        return parts.get(cls.name) if parts and cls.is_module and self._world_of(cls) is None else None

    def _world_part(self, cls: ClassInfo, attr: str, value: Value) -> Value:
        parts = self._parts_of(cls)
        world = parts.get(attr) if parts else None
        return part_value(world, value, cls.node, self.origin) if world is not None else value

    def _arguments_of(self, cls: ClassInfo) -> dict | None:
        worlds = getattr(self.ctx, "worlds", None)
        return worlds.arguments.get(cls.name) if worlds is not None else None

    def _returned_world(self, node: cst.Call):
        """A call of a project function (another file) that returns a low-precision model, or
        builds a project class whose submodules keep a low dtype."""
        worlds = getattr(self.ctx, "worlds", None)
        if worlds is None:
            return None
        called = dotted_name(node.func) or ""
        world = worlds.returned.get(called)
        if world is not None:
            return returned_value(world, node, self.origin)
        built = worlds.built.get(called)
        return built_value(built, node, self.origin, called) if built is not None else None

    def _loaded_checkpoint(self, qualified, node: cst.Call):
        """``torch.load(...)`` when the project saves low-precision checkpoints (facts/flow/checkpoint_loads.py)."""
        worlds = getattr(self.ctx, "worlds", None)
        world = getattr(worlds, "checkpoints", None)
        if world is None or not any(name in checkpoints.LOADERS for name in qualified):
            return None
        return checkpoints.loaded(world, node)

    def _project_result(self, node: cst.Call, frame: Frame) -> Value | None:
        """A call of project functions in other files: what their summaries say they return."""
        results = self.ctx.worlds.values.get(dotted_name(node.func) or "")
        if not results:
            return None

        def argument(name: str, position: int | None):
            arg = _arg(node, name, position)
            return (arg is not None, self._current.get(id(arg.value)) if arg is not None else None)

        return result_value(results, node, self.origin, argument)

    def _bind_arguments(self, info: FunctionInfo, call: cst.Call, frame: Frame, self_value, self_key) -> dict:
        """Parameter -> (value, caller's dotted name, caller's sub-attributes), the way Python binds
        a call: positional arguments in order (``*seq`` spliced in when its items are known),
        keywords by name (``**mapping`` by its known keys), the rest to ``*args`` / ``**kwargs``,
        defaults for what is left. After a ``*seq`` or ``**mapping`` the analysis cannot read, the
        parameters it may fill stay unknown (never their defaults)."""
        node = info.node
        positional = [*node.params.posonly_params, *node.params.params]
        by_name = {p.name.value: p for p in (*node.params.params, *node.params.kwonly_params)}
        bound: dict[str, tuple] = {}
        index = 0
        if self_value is not None and positional:
            bound[positional[0].name.value] = (self_value, self_key, self._sub_env(self_key, frame))
            index = 1
        extra_positional: list | None = []  # None: a ``*seq`` of unknown length came
        extra_keywords: dict | None = {}  # None: a ``**mapping`` of unknown keys came

        def place(entry) -> None:
            nonlocal index
            if extra_positional is None:
                return
            if index < len(positional):
                bound[positional[index].name.value] = entry
            else:
                extra_positional.append(entry)
            index += 1

        def name(keyword: str, entry) -> None:
            if keyword in by_name:
                bound[keyword] = entry
            elif extra_keywords is not None:
                extra_keywords[keyword] = entry

        for arg in call.args:
            value = self._current.get(id(arg.value))
            if arg.star == "*":
                if value is not None and value.kind == TUPLE and value.items is not None and value.info not in ITERATORS:
                    for item in value.items:
                        place((item, None, {}))
                else:
                    extra_positional = None
                continue
            if arg.star == "**":
                if value is not None and value.kind == MAPPING and value.keys is not None:
                    for keyword, item in zip(value.keys, value.items):
                        name(keyword, (item, None, {}))
                else:
                    extra_keywords = None
                continue
            key = dotted_name(arg.value) if isinstance(arg.value, (cst.Name, cst.Attribute)) else None
            entry = (value, key, self._sub_env(key, frame))
            if arg.keyword is None:
                place(entry)
            else:
                name(arg.keyword.value, entry)
        if extra_positional is not None and extra_keywords is not None:
            for param, value in info.defaults.items():
                bound.setdefault(param, (value, None, {}))
        else:
            for param in (*positional[index:], *node.params.kwonly_params):
                # a default the unknown ``*seq`` / ``**mapping`` may override
                if param.name.value not in bound and extra_keywords is not None and param in node.params.kwonly_params:
                    bound[param.name.value] = (info.defaults.get(param.name.value), None, {})
        star, double = node.params.star_arg, node.params.star_kwarg
        if isinstance(star, cst.Param) and extra_positional is not None:
            bound[star.name.value] = (make(TUPLE, items=tuple(entry[0] for entry in extra_positional)), None, {})
        if isinstance(double, cst.Param) and extra_keywords is not None:
            bound[double.name.value] = (_mapping(list(extra_keywords), [entry[0] for entry in extra_keywords.values()]), None, {})
        return bound

    @staticmethod
    def _sub_env(key: str | None, frame: Frame) -> dict:
        if not key:
            return {}
        prefix = key + "."
        found = {}
        current: Frame | None = frame
        while current is not None:
            for k, v in current.env.items():
                if k.startswith(prefix) and k[len(key):] not in found:
                    found[k[len(key):]] = v
            current = current.outer
        return found

    def _invoke(self, info: FunctionInfo, bound: dict, caller: Frame, autocast: tuple, *, generic: bool = False):
        """Run a function body with bound parameters; returns (return value, mutations)."""
        node = info.node
        key = None
        if not generic:
            key = (
                id(node),
                tuple(sorted((name, entry[0], tuple(sorted(entry[2].items(), key=lambda kv: kv[0]))) for name, entry in bound.items())),
                autocast,
            )
            try:
                cached = self._memo.get(key)
            except TypeError:
                cached, key = None, None
            if cached is not None:
                return cached
            if (
                caller.depth >= MAX_DEPTH
                or id(node) in self._active
                or self._runs.get(id(node), 0) >= MAX_RUNS_PER_FUNCTION
            ):
                return (None, {}, None)
        self._runs[id(node)] = self._runs.get(id(node), 0) + 1
        frame = Frame(function=node, cls=info.cls, outer=info.outer, autocast=autocast + info.autocast,
                      depth=caller.depth + 1)
        for name, (value, caller_key, sub) in bound.items():
            frame.env[name] = value
            frame.params[name] = caller_key
            for suffix, sub_value in sub.items():
                frame.env[name + suffix] = sub_value
        for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            if param.name.value not in frame.env:
                frame.env[param.name.value] = None
                frame.params[param.name.value] = None
        for star in (node.params.star_arg, node.params.star_kwarg):
            if isinstance(star, cst.Param) and star.name.value not in frame.env:
                frame.env[star.name.value] = None
        facts = self._dtype_facts_of(frame)
        for name, evidence in facts.evidence.items():
            if evidence.parameter and name in frame.env:
                # a value a caller passes stays what it is (widen=False): the evidence fills the unknown
                frame.env[name] = lowp_evidence.evidenced(frame.env[name], self._evidence_origin(evidence.node),
                                                          widen=False)
        for name, follows in facts.follows.items():
            if follows.parameter and name in frame.env:
                frame.env[name] = lowp_evidence.evidenced(
                    frame.env[name], self._follows_origin(follows), widen=False)
        contract = self._contract_of(info.cls, info.outer)
        for name, param in lowp_contract.contract_parameters(node, contract).items():
            if name in frame.env:  # a library's contract: float16/bfloat16 on its callers' path
                frame.env[name] = lowp_evidence.evidenced(
                    frame.env[name], self._contract_origin(param, contract), widen=False)
        self._active.append(id(node))
        try:
            falls = self._body(node.body, frame)
        finally:
            self._active.pop()
        if falls and frame.info is not None:
            frame.returns = join(frame.returns, None)  # falling off the end returns None
        summary = self.flow._summaries.get(id(node))
        if summary is None:
            summary = self.flow._summaries[id(node)] = FunctionSummary(node)
        summary.returns = frame.returns if summary.calls == 0 else join(summary.returns, frame.returns)
        summary.calls += 1
        final_self = frame.env.get("self") if info.cls else None
        if info.cls is not None and node.name.value == "__init__":
            self._collect_attrs(info.cls, frame)
            if final_self is not None and final_self.kind == MODULE:
                # the low parts this construction built (``self.act = nn.PReLU(..., dtype=torch.float16)``)
                parts = merge_parts(*(_low_parts(value) for key, value in sorted(frame.env.items(), key=lambda kv: kv[0])
                                      if key.startswith("self.") and "." not in key[5:]))
                if parts:
                    final_self = final_self.replace(parts=merge_parts(final_self.parts, parts))
        result = (frame.returns, dict(frame.mutations), final_self)
        if key is not None:
            self._memo[key] = result
        return result

    def _collect_attrs(self, cls: ClassInfo, frame: Frame) -> None:
        first = not cls.init_done
        for key, value in frame.env.items():
            if key.startswith("self.") and "." not in key[5:]:
                attr = key[5:]
                cls.attrs[attr] = value if first or attr not in cls.attrs else join(cls.attrs[attr], value)
        cls.init_done = True

    def _apply_mutations(self, mutations: dict, bound: dict, frame: Frame) -> None:
        for key, value in mutations.items():
            head, _, rest = key.partition(".")
            if head in bound:
                caller_key = bound[head][1]
                if not caller_key:
                    continue
                target = caller_key + ("." + rest if rest else "")
            else:
                target = key
            self.mutate(target, value, frame)

    def _call_local(self, info: FunctionInfo, call: cst.Call, frame: Frame, self_value=None, self_key=None):
        cls = info.cls
        if cls is not None and self_value is not None and not cls.init_done and info.node.name.value != "__init__":
            # a method called on an instance before the flow ran its class's ``__init__`` (a plain
            # function given ``model: Detector`` runs first): its attributes first
            init = cls.methods.get("__init__")
            init_info = self._function_info(init) if init is not None else None
            if init_info is not None and id(init_info.node) not in self._runs:
                self._run_generic(init_info)
        bound = self._bind_arguments(info, call, frame, self_value, self_key)
        returns, mutations, _ = self._invoke(info, bound, frame, frame.autocast)
        self._apply_mutations(mutations, bound, frame)
        return returns

    def _construct(self, cls: ClassInfo, call: cst.Call, frame: Frame, key: str | None) -> Value:
        instance = self._instance(cls, self.origin(call))
        init = cls.methods.get("__init__")
        info = self._function_info(init) if init is not None else None
        if info is not None:
            bound = self._bind_arguments(info, call, frame, instance, None)
            _, mutations, final_self = self._invoke(info, bound, frame, frame.autocast)
            if final_self is not None and final_self.kind == MODULE:
                instance = final_self
        return instance

    def _container(self, node: cst.Call, qualified: str) -> Value:
        """``nn.Sequential(...)`` / ``nn.ModuleList([...])`` / ``nn.ModuleDict({...})``: float32,
        keeping its layers in order (``items``: what calling, indexing or iterating it runs) and
        their low parts."""
        value = make(MODULE, (self.default_float,), self.origin(node), info=qualified)
        children: list[Value | None] | None = []
        keys = None
        for arg in node.args:
            if arg.keyword is not None:
                continue
            given = self._current.get(id(arg.value))
            if arg.star == "*" or not qualified.endswith("Sequential"):
                # ``nn.Sequential(*layers)``, ``nn.ModuleList([...])``: the layers a list holds
                if given is not None and given.kind == TUPLE and given.items is not None and given.info not in ITERATORS:
                    children.extend(given.items)
                elif given is not None and given.kind == TUPLE and given.element is not None:
                    children.append(given.element)  # a comprehension: one layer stands for all
                elif given is not None and given.kind == MAPPING and given.keys is not None and not children:
                    children, keys = list(given.items), given.keys
                else:
                    children = None
                    break
            else:
                children.append(given)
        parts = merge_parts(*(_low_parts(child) for child in children or ()))
        value = value.replace(items=tuple(children), keys=keys) if children is not None else value
        return value.replace(parts=parts) if parts else value

    def _parameter_parts(self, module: Value, key: str | None, frame: Frame) -> tuple:
        """The low parts of a module's parameters: its own, and those of its attributes cast
        since (``model.init_weights()`` casting ``self.wte``)."""
        found = [module.parts]
        if key:
            found.extend(_low_parts(value) for _, value in sorted(self._sub_env(key, frame).items())
                         if value is not None and value.kind == MODULE and part_dtypes(value))
        return merge_parts(*found)

    # -- expressions --------------------------------------------------------------------------
    def ev(self, node: cst.BaseExpression | None, frame: Frame, statement: bool = False) -> Value | None:
        if node is None:
            return None
        value = self._eval(node, frame, statement)
        self._current[id(node)] = value
        return self._record(node, value)

    def _eval(self, node, frame: Frame, statement: bool) -> Value | None:
        # Exact type tests: libcst's node classes are final, and isinstance on them goes through
        # ABCMeta, which made this dispatch the flow's single largest cost.
        kind = type(node)
        if kind is cst.Name:
            return self._name(node, frame)
        if kind is cst.Attribute:
            return self._attribute(node, frame)
        if kind is cst.Call:
            value = self._call(node, frame, statement)
            if value is None and getattr(self.ctx, "worlds", None) is not None:
                return self._project_result(node, frame)
            return value
        if kind is cst.Subscript:
            return self._subscript(node, frame)
        if kind is cst.BinaryOperation:
            return self._binary(node, frame)
        if kind is cst.Comparison:
            left = self.ev(node.left, frame)
            tensors = [left] if left is not None and left.kind in (TENSOR, NUMPY) else []
            for target in node.comparisons:
                right = self.ev(target.comparator, frame)
                if right is not None and right.kind in (TENSOR, NUMPY):
                    tensors.append(right)
            if tensors and not isinstance(node.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
                partial = any(t.partial or not t.dtypes for t in tensors)
                return make(tensors[0].kind, (BOOL,), self.origin(node)).replace(partial=partial)
            return None
        if kind is cst.UnaryOperation:
            value = self.ev(node.expression, frame)
            if isinstance(node.operator, cst.Not):
                return None
            return value if value is not None and value.kind in (TENSOR, NUMPY) else None
        if kind is cst.IfExp:
            self.ev(node.test, frame)
            decided = self._decided(node.test, frame)
            if decided is not None:
                return self.ev(node.body if decided else node.orelse, frame)
            flag = _flag_of(node.test)
            facts = self._dtype_facts_of(frame)
            body_tests, else_tests = facts.tests(node.test) if facts is not None else ([], [])
            if (flag is None or not frame.conditioned.get(flag[0])) and not body_tests and not else_tests:
                return join(self.ev(node.body, frame), self.ev(node.orelse, frame))
            saved = frame.env
            frame.env = dict(saved)
            self._refine(frame, flag, True)
            self._narrow(frame, facts, body_tests)  # ``x.float() if x.dtype == torch.float16 else x``
            body = self.ev(node.body, frame)
            frame.env = dict(saved)
            self._refine(frame, flag, False)
            self._narrow(frame, facts, else_tests)
            orelse = self.ev(node.orelse, frame)
            frame.env = saved
            return join(body, orelse)
        if kind is cst.BooleanOperation:
            left = self.ev(node.left, frame)
            right = self.ev(node.right, frame)
            if left is not None and right is not None and left.kind == right.kind:
                return join(left, right)
            return None
        if kind in (cst.Tuple, cst.List):
            pieces = []
            for element in node.elements:
                value = self.ev(element.value, frame)
                # ``[*a, b]``: the items of ``a`` spliced in
                pieces.append(value if isinstance(element, cst.StarredElement) else make(TUPLE, items=(value,)))
            # A list indexes like a tensor of indices (``x[rows] = src`` with ``rows = [0, 2]``).
            return _concatenated(pieces, "list" if kind is cst.List else None)
        if kind is cst.Dict:
            keys: list[str | None] = []
            values: list[Value | None] = []
            for item in node.elements:
                if isinstance(item, cst.DictElement):
                    self.ev(item.key, frame)
                    keys.append(_string(item.key))
                    values.append(self.ev(item.value, frame))
                else:  # ``**other``: its keys when known
                    other = self.ev(item.value, frame)
                    if other is not None and other.kind == MAPPING and other.keys is not None:
                        keys.extend(other.keys)
                        values.extend(other.items)
                    else:
                        keys.append(None)
                        values.append(other.element if other is not None and other.kind == MAPPING else None)
            return _mapping(keys, values)
        if kind in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            return self._comprehension(node, frame)
        if kind is cst.NamedExpr:
            value = self.ev(node.value, frame)
            self._bind(node.target, value, frame, node.value)
            return value
        if kind is cst.Await:
            return self.ev(node.expression, frame)
        if kind in (cst.FormattedString, cst.ConcatenatedString):
            if kind is cst.FormattedString:
                for part in node.parts:
                    if isinstance(part, cst.FormattedStringExpression):
                        self.ev(part.expression, frame)
            return None
        if kind is cst.Lambda:
            return None
        if kind is cst.Set:
            for element in node.elements:
                self.ev(element.value, frame)
            return None
        if kind is cst.Yield:
            if isinstance(node.value, cst.BaseExpression):
                self.ev(node.value, frame)
            return None
        return None

    def _name(self, node: cst.Name, frame: Frame) -> Value | None:
        name = node.value
        found, value = self.lookup(name, frame)
        if found:
            return value
        if name in _CONSTANTS:
            return make(CONST, info=_CONSTANTS[name])
        word = self._dtype_constant(node)
        if word is not None:
            return make(DTYPE, (word,), self.origin(node))
        current: Frame | None = frame
        while current is not None:
            if name in current.classes:
                return make(CLASS, info=name)
            current = current.outer
        return None

    def _dtype_constant(self, node: cst.BaseExpression) -> str | None:
        return lib.dtype_constant(self.names, node)

    def _attribute(self, node: cst.Attribute, frame: Frame) -> Value | None:
        key = dotted_name(node)
        if key is not None:
            found, value = self.lookup(key, frame)
            if found:
                # Still evaluate the receiver so it is recorded.
                self.ev(node.value, frame)
                return value
            word = self._dtype_constant(node)
            if word is not None:
                return make(DTYPE, (word,), self.origin(node))
        base = self.ev(node.value, frame)
        attr = node.attr.value
        if attr == "dtype" and (base is None or base.kind == MODULE and not base.dtypes) and frame.cls is not None:
            contract = self._contract_of(frame.cls, frame)
            component = lowp_contract.component_dtype(node, contract)
            if component is not None:
                # ``self.vae.dtype`` in a diffusers pipeline: its torch_dtype on the usual path (lowp_contract.py)
                origin = self._contract_origin(node, contract, "self.dtype" if component == "self" else f"self.{component}")
                return make(DTYPE, LOW, origin).replace(partial=True)
        if base is None:
            return None
        if attr == "dtype" and base.kind in (TENSOR, MODULE, NUMPY, PARAMS):
            return Value(kind=DTYPE, dtypes=base.dtypes, partial=base.partial, origins=base.origins)
        if base.kind == TENSOR:
            if attr in ("data", "T", "mT", "H", "real"):
                return base
            if attr == "grad":
                return base.replace(role="grad", autocast=None)
            if attr in lib.OUTPUT_FIELDS or attr == "loss":
                return base.replace(partial=base.partial or attr == "loss", role=None)
            return None
        if base.kind == MODULE:
            if attr in ("module", "_orig_mod"):
                return base
            if attr in ("weight", "bias"):
                return Value(kind=TENSOR, dtypes=base.dtypes, partial=base.partial, origins=base.origins, role="param")
            attrs = self._class_attrs(base, frame)
            sub = attrs.get(attr) if attrs is not None else None
            if sub is not None and sub.kind == MODULE:
                # A submodule follows its model's whole-model casts.
                return _retyped(sub, base.dtypes, base.origins, base.partial)
            return None
        if base.kind == INSTANCE:
            attrs = self._class_attrs(base, frame)
            return attrs.get(attr) if attrs is not None else None
        if base.kind == BATCH:
            return self._field(base, attr, node)
        if base.kind == TUPLE and base.info == "output":
            return base.element
        if base.kind == TUPLE and base.info == AUTOENCODER_OUTPUT and attr in AUTOENCODER_FIELDS:
            return base if attr == "latent_dist" else base.element
        return None

    def _class_attrs(self, value: Value, frame: Frame) -> dict | None:
        cls = self._find_class(value.info, frame) if isinstance(value.info, str) else None
        return cls.attrs if cls is not None else None

    def _field(self, batch: Value, name: str | None, node) -> Value | None:
        if name in lib.TOKEN_FIELDS:
            return make(TENSOR, (INT,), batch.origin)
        if name in lib.FLOAT_FIELDS and batch.info == "processor" \
                or name == lib.IMAGE_FIELD and batch.info == IMAGE_BATCH:
            return batch.element
        if batch.info == "tokenizer" and name not in lib.FLOAT_FIELDS:
            # (a processor's text-and-images call read as text: its pixel_values are not ids)
            return make(TENSOR, (INT,), batch.origin)
        return None

    def _subscript(self, node: cst.Subscript, frame: Frame) -> Value | None:
        base = self.ev(node.value, frame)
        index_node = None
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                index_node = element.slice.value
                self.ev(index_node, frame)
            else:
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    self.ev(part, frame)
        if base is None:
            return None
        if base.kind in (TENSOR, NUMPY):
            return base.replace(role=None) if base.role else base
        if base.kind == BATCH:
            return self._field(base, _string(index_node), node)
        if hf_datasets.table_of(base) is not None:
            key = _string(index_node)
            if key is not None:
                # a float column's values (``dataset["prompt_embeds"]``), else a split (``["train"]``)
                return make(TUPLE, info=hf_datasets.PY_FLOATS) if key in hf_datasets.table_of(base).floats else base
            return hf_datasets.row(base) if isinstance(index_node, cst.Integer) else None  # ``dataset[0]``
        if base.kind == TUPLE and base.items is not None and base.info not in ITERATORS and len(node.slice) == 1 \
                and isinstance(node.slice[0].slice, cst.Slice):
            # ``text_encoders[:2]``: the items between literal bounds, in order
            bounds = _slice_bounds(node.slice[0].slice)
            return base.replace(items=base.items[bounds[0]:bounds[1]]) if bounds is not None else None
        if base.kind == TUPLE and base.items is not None and len(node.slice) == 1 and isinstance(index_node, cst.Integer):
            position = int(index_node.value)
            if -len(base.items) <= position < len(base.items):
                return base.items[position]
            return None
        if base.kind == TUPLE and base.info == "output":
            return base.element
        if base.kind == MAPPING and isinstance(base.info, checkpoints.LoadedCheckpoint):
            return checkpoints.indexed(base.info, index_node, node, self.origin)
        if base.kind == MAPPING:
            return _keyed(base, _string(index_node))
        if base.kind == TUPLE and base.items is not None and len(node.slice) == 1 and index_node is not None:
            # an index the analysis cannot read (``layers[i]``): any of the items
            return _joined(base.items)
        if base.kind == TUPLE and base.element is not None and len(node.slice) == 1 and index_node is not None:
            return base.element
        if base.kind == MODULE and base.items and len(node.slice) == 1 and index_node is not None:
            # ``net[0]``: a layer of an nn.Sequential / nn.ModuleList
            if isinstance(index_node, cst.Integer) or isinstance(index_node, cst.UnaryOperation) and isinstance(index_node.expression, cst.Integer):
                position = int(self.ctx.code_for(index_node))
                if -len(base.items) <= position < len(base.items):
                    return base.items[position]
            return _joined(base.items)
        return None

    def _binary(self, node: cst.BinaryOperation, frame: Frame) -> Value | None:
        left = self.ev(node.left, frame)
        right = self.ev(node.right, frame)
        tensor_kinds = (TENSOR, NUMPY)
        left_t = left is not None and left.kind in tensor_kinds
        right_t = right is not None and right.kind in tensor_kinds
        if not isinstance(node.operator, ARITHMETIC) and not isinstance(
            node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor, cst.LeftShift, cst.RightShift)
        ):
            return None
        if isinstance(node.operator, cst.Add) and left is not None and right is not None \
                and left.kind in (TUPLE, PARAMS) and right.kind in (TUPLE, PARAMS):
            # ``list(a.parameters()) + list(b.parameters())``, ``[x] + rest``
            return _concatenated([left, right], left.info if left.kind == TUPLE else None)
        if isinstance(node.operator, cst.Multiply) and left is not None and left.kind == TUPLE and right is None:
            return _concatenated([left], left.info)  # ``[layer] * n``: any number of copies
        divide = isinstance(node.operator, cst.Divide)
        if isinstance(node.operator, cst.MatrixMultiply) and self._autocast_dtype(frame) and not (
                left_t and left.kind == NUMPY or right_t and right.kind == NUMPY):
            return self._autocast_result(frame, certain=True, node=node)  # ``q @ k`` is autocast's matmul
        if left_t and right_t:
            if left.kind != right.kind:
                return None
            side = self._zero_dim_side(node, frame) if left.kind == TENSOR else None
            if side is not None:
                zero = left if side == "left" else right
                # a 0-dim tensor does not promote a dimensioned one of its category
                # (``latents * alphas_cumprod[t]`` keeps the latents' dtype; tensor_rank.py)
                dimensioned = right if zero is left else left
                dtypes = frozenset(_zero_dim_promotion(x, y) for x in dimensioned.dtypes for y in zero.dtypes)
                # what else the 0-dim one may be matters only to a dimensioned int or bool
                partial = dimensioned.partial or zero.partial and not dimensioned.dtypes <= FLOATS
                value = make(TENSOR, dtypes, dimensioned.origin).replace(partial=partial)
                return self._keep_origins(value, dimensioned, zero)
            dtypes, partial = lowp_evidence.promote_evidenced(left, right)
            if divide and dtypes & {INT, BOOL}:  # true division: NumPy gives float64, torch its default float
                true_float = FP64 if left.kind == NUMPY else self.default_float
                dtypes = frozenset(true_float if d in (INT, BOOL) else d for d in dtypes)
                return make(left.kind, dtypes, self.origin(node)).replace(partial=partial)
            origin = left.origin if left.dtypes >= dtypes else right.origin
            value = make(left.kind, dtypes, origin).replace(partial=partial)
            return self._keep_origins(value, left, right)
        tensor, other, other_node = (left, right, node.right) if left_t else (right, left, node.left) if right_t else (None, None, None)
        if tensor is None:
            return None
        scalar = _number_kind(other_node)
        if (scalar == FP32 or divide) and tensor.dtypes & {INT, BOOL}:
            true_float = FP64 if tensor.kind == NUMPY else self.default_float
            dtypes = frozenset(true_float if d in (INT, BOOL) else d for d in tensor.dtypes)
            return make(tensor.kind, dtypes, self.origin(node)).replace(partial=tensor.partial)
        if other is not None and other.kind not in tensor_kinds and other.dtypes:
            return None
        return tensor.replace(role=None) if tensor.role else tensor

    def _zero_dim_side(self, node: cst.BinaryOperation, frame: Frame) -> str | None:
        """Which operand of ``node`` ("left"/"right") the code shows 0-dim when the other is not."""
        function = frame.function if isinstance(frame.function, cst.FunctionDef) else None
        cls = frame.cls.node if frame.cls is not None else None
        left = self._ranks.zero_dim(node.left, function, cls)
        right = self._ranks.zero_dim(node.right, function, cls)
        if left == right:
            return None
        return "left" if left else "right"

    @staticmethod
    def _keep_origins(value: Value, *sources: Value) -> Value:
        origins = []
        for dtype in sorted(value.dtypes):
            for source in sources:
                origin = source.origin_of(dtype)
                if origin is not None:
                    origins.append((dtype, origin))
                    break
        ordered = tuple(sorted(origins, key=lambda pair: ("fp32 fp16 bf16 fp64 int bool".split().index(pair[0]))))
        return value.replace(origins=ordered)

    def _comprehension(self, node, frame: Frame) -> Value | None:
        saved = frame.env
        frame.env = dict(saved)
        iterated = None
        for index, clause in enumerate(_for_clauses(node)):
            value = self.ev(clause.iter, frame)
            if index == 0:
                iterated = value
            self._bind(clause.target, self._element(value, clause.iter), frame, None)
            for condition in clause.ifs:
                self.ev(condition.test, frame)
        if isinstance(node, cst.DictComp):
            self.ev(node.key, frame)
            element = self.ev(node.value, frame)
        else:
            element = self.ev(node.elt, frame)
        frame.env = saved
        if iterated is not None and iterated.kind == PARAMS:
            if element is not None and element.role == "param":
                return iterated.replace(info=None)
            return None
        if iterated is not None and iterated.kind == BATCH and isinstance(node, cst.DictComp):
            return iterated
        if element is not None:
            return make(TUPLE, element=element, info="comprehension")
        return None

    # -- calls --------------------------------------------------------------------------------
    def _call(self, node: cst.Call, frame: Frame, statement: bool) -> Value | None:
        func = node.func
        receiver = None
        callee = None
        if isinstance(func, cst.Attribute):
            qualified = self.names.qualified_names(func)
            if not qualified:
                callee = self.ev(func, frame)
                receiver = self._current.get(id(func.value))
                if callee is None and frame.cls is None and isinstance(func.value, cst.Name) \
                        and func.value.value == "self" and _world_module(receiver) \
                        and func.attr.value not in NOT_SUBMODULES and not func.attr.value.startswith("_"):
                    # ``self.to_out(x)`` in a function run as the forward of a precision world's
                    # modules (monkeypatched in): its submodules are in the world too
                    callee = self._record(func, receiver.replace(info=None))
        else:
            qualified = self.names.qualified_names(func) if isinstance(func, cst.Name) else ()
            if not qualified:
                callee = self.ev(func, frame)
        for arg in node.args:
            self.ev(arg.value, frame)
        if qualified:
            returned = self._returned_world(node)
            if returned is not None:
                return returned
            loaded = self._loaded_checkpoint(qualified, node)
            if loaded is not None:
                return loaded
            for name in qualified:
                value = self._library_call(name, node, frame)
                if value is not NOTHING:
                    return value
            return self._generic_torch(qualified, node)
        if isinstance(func, cst.Attribute):
            if hf_datasets.table_of(receiver) is not None:
                return self._dataset_method(func.attr.value, receiver, node, frame)
            if callee is not None and callee.kind in (MODULE, TOKENIZER, INSTANCE):
                return self._plain_call(func.attr.value, callee, node, frame)
            return self._method(func, receiver, node, frame, statement)
        if isinstance(func, cst.Name):
            return self._plain_call(func.value, callee, node, frame)
        # any other callee (``nn.Linear(8, 2).half()(x)``, ``self.blocks[i](x)``): what it evaluated
        # to (``func`` was evaluated once above: twice doubled the time per ``()``)
        return self._plain_call("", callee, node, frame) if callee is not None else None

    def _argument_value(self, node: cst.Call, keyword: str, position: int | None = None) -> Value | None:
        arg = _arg(node, keyword, position)
        return self._current.get(id(arg.value)) if arg is not None else None

    def _dtype_argument(self, node: cst.Call, keyword: str = "dtype", position: int | None = None):
        """(dtypes, origin node, given): the dtype an argument names; dtypes empty when unknown."""
        arg = _arg(node, keyword, position)
        if arg is None:
            return frozenset(), None, False
        value = self._current.get(id(arg.value))
        if value is not None and value.kind == DTYPE:
            return value.dtypes, value, True
        if value is None and isinstance(arg.value, cst.Name) and arg.value.value in lib.PYTHON_TYPE_DTYPES:
            # ``dtype=float``: torch and NumPy both map the Python type to float64 (int: int64)
            return frozenset({lib.PYTHON_TYPE_DTYPES[arg.value.value]}), None, True
        text = _string(arg.value)
        if text is not None and text in lib.DTYPE_WORDS:
            return frozenset({lib.DTYPE_WORDS[text]}), None, True
        if text is not None and text.startswith("torch."):
            word = lib.DTYPE_WORDS.get(text[6:])
            return (frozenset({word}) if word else frozenset()), None, True
        return frozenset(), None, True

    def _evidence_kept(self, value: Value, source: Value | None) -> Value:
        """A value whose dtype ``source`` names (``torch.eye(n, dtype=x.dtype)``, ``y.to(orig_dtype)``):
        the low dtypes only a function's evidence gives keep it as their origin (lowp_evidence.py)."""
        if source is None or not any(isinstance(o, lowp_evidence.EvidenceOrigin) for _, o in source.origins):
            return value
        return self._keep_origins(value, source, value)

    def _typed(self, kind: str, node: cst.Call, default: str | None, **fields) -> Value | None:
        """A new tensor/array/module: ``dtype=`` when given, else ``default``."""
        dtypes, source, given = self._dtype_argument(node)
        if given:
            if not dtypes:
                return make(kind, **fields)
            value = self._evidence_kept(make(kind, dtypes, self.origin(node), **fields), source)
            return value.replace(partial=True) if source is not None and source.partial else value
        if default is None:
            return make(kind, **fields)
        return make(kind, (default,), self.origin(node), **fields)

    def _library_call(self, qualified: str, node: cst.Call, frame: Frame):
        module, _, attr = qualified.rpartition(".")
        if qualified in amp.AUTOCAST:
            info = amp.autocast_info(self.names, node)
            if info is not None:
                return make(AUTOCAST, info=self._refine_autocast(info, node))
        if qualified in amp.GRAD_SCALER:
            enabled = _arg(node, "enabled")
            flag = amp.literal_bool(enabled.value) if enabled is not None else True
            value = make(SCALER, info=ScalerInfo(node=node, enabled=flag))
            if id(node) not in self._scaler_nodes:
                self._scaler_nodes.add(id(node))
                self.flow.scalers.append(value)
            return value
        if module == "torch" or module in ("torch.nn.functional",) or module.startswith("torch.") and module.split(".")[1] in ("special", "linalg", "fft"):
            return self._torch_function(module, attr, node, frame)
        if module == "numpy" or module.startswith("numpy."):
            return self._numpy_function(module, attr, node)
        if qualified in lib.PASS_THROUGH_CALLS or qualified.endswith("DistributedDataParallel"):
            return self._first_argument(node)
        if qualified in lib.PEFT_CALLS:
            attached = lib.ATTACH_ADAPTER_FUNCTIONS.get(qualified)
            base = self._argument_value(node, attached[1], attached[0]) if attached else self._first_argument(node)
            return base.replace(role="peft") if base is not None and base.kind == MODULE else make(MODULE, role="peft")
        if (module == "torch.nn" or module.startswith("torch.nn.modules")) and attr[:1].isupper():
            if attr == "Parameter":
                data = self._first_argument(node)
                if data is not None and data.kind == TENSOR:
                    return data.replace(role="param", autocast=None)
                return make(TENSOR, role="param")
            if lib.LOSS_CLASS.search(attr):
                # its class weights travel with it (``element``): each call computes with them
                weight = self._argument_value(node, "weight") or self._argument_value(node, "pos_weight")
                return make(MODULE, info=qualified, element=weight if weight is not None and weight.kind == TENSOR else None)
            if attr in lib.CONTAINERS:
                return self._container(node, qualified)
            layer = self._typed(MODULE, node, self.default_float, info=qualified)
            if layer is not None and layer.dtypes & LOW and _arg(node, "dtype") is not None:
                # ``nn.PReLU(depth, dtype=torch.float16)``: a layer that keeps its own dtype in a model
                return self._as_part(layer, node)
            return layer
        if module == "torch.optim" or module.startswith("torch.optim.") or (
            lib.OPTIMIZER_CLASS.search(attr) and module.startswith(lib.OPTIMIZER_MODULES)
        ):
            if attr[:1].isupper() and "lr_scheduler" not in module and "Scheduler" not in attr and "LR" not in attr:
                return self._optimizer(qualified, node, frame)
            return None
        if attr in ("from_pretrained", "from_config", "from_single_file"):
            return self._from_pretrained(module, node)
        if qualified in ("timm.create_model",) or module.startswith("torchvision.models"):
            return self._typed(MODULE, node, self.default_float, info=qualified)
        if attr[:1].isupper() and module.startswith(("transformers", "diffusers")) and lib.TOKENIZER.search(attr):
            return make(TOKENIZER, info="processor" if lib.PROCESSOR.search(attr) else "tokenizer")
        if qualified in ("copy.deepcopy",):
            return self._first_argument(node)
        if qualified in ("itertools.chain",):
            # ``chain(unet.parameters(), text_encoder.parameters())``: one sequence after another
            pieces = [self._current.get(id(a.value)) for a in node.args if a.keyword is None and not a.star]
            return _concatenated(pieces, None) if pieces and len(pieces) == len(node.args) else None
        if qualified in lib.FLOAT64_ARRAY_FUNCTIONS:
            return make(NUMPY, (FP64,), self.origin(node))
        if qualified in lib.AUDIO_READERS:
            if _arg(node, "dtype") is not None:
                return None  # a dtype the call asks for: the default no longer holds
            samples = make(NUMPY, (lib.AUDIO_READERS[qualified],), self.origin(node))
            return make(TUPLE, items=(samples, None))
        if qualified in lib.SAME_DTYPE_ARRAY_FUNCTIONS:
            first = self._first_argument(node)
            return first if first is not None and first.kind == NUMPY and first.dtypes <= {FP16, FP32, FP64} else None
        if qualified in lib.PIL_IMAGE_CALLS:
            mode = lib.PIL_MODE_DTYPES.get(_string(node.args[0].value)) if attr == "new" and node.args else None
            return make(IMAGE, (mode,) if mode else (), self.origin(node))
        if qualified in loaders.DATA_LOADERS:
            return self._data_loader(node, frame)
        if qualified in hf_datasets.SOURCES or qualified in hf_datasets.CONCATENATE:
            return self._dataset_source(qualified, node)
        if qualified in hf_datasets.PARTIAL:
            return self._partial(node)
        if qualified in loaders.PROGRESS_BARS:
            wrapped = self._first_argument(node)
            return wrapped if wrapped is not None and wrapped.info == loaders.LOADER else None
        return NOTHING

    def _data_loader(self, node: cst.Call, frame: Frame) -> Value | None:
        """``DataLoader(dataset)`` over a dataset class of this file: iterating it gives the
        dataset's ``__getitem__`` result, collated (facts/flow/loaders.py). With
        ``collate_fn=<a function of this file>`` a batch is what that function returns, whatever
        the dataset: it is run on a list of the samples (unknown unless the dataset is a class
        of this file)."""
        dataset = self._argument_value(node, "dataset", 0)
        collate_fn = _arg(node, "collate_fn")
        sample = None
        if dataset is not None and dataset.kind == INSTANCE:
            cls = self._find_class(dataset.info, frame) if isinstance(dataset.info, str) else None
            method = cls.methods.get("__getitem__") if cls is not None else None
            info = self._function_info(method) if method is not None else None
            params = info.node.params.params if info is not None else ()
            if params:
                sample, _, _ = self._invoke(info, {params[0].name.value: (dataset, None, {})}, frame, ())
        if hf_datasets.table_of(dataset) is not None:
            # a ``datasets`` table: rows of Python objects; only a collate_fn of the file says
            # what a batch of them is (the default collate's float64 lists are not modelled)
            sample = hf_datasets.row(dataset)
            if collate_fn is None:
                return None
        if collate_fn is not None:
            batch = self._custom_collate(collate_fn.value, sample, frame)
        else:
            batch = loaders.collate(sample)
        return make(TUPLE, element=batch, info=loaders.LOADER) if batch is not None else None

    # -- Hugging Face ``datasets`` tables (facts/flow/hf_datasets.py) -------------------------
    def _dataset_source(self, qualified: str, node: cst.Call) -> Value | None:
        if hf_datasets.formats_rows(self.ctx):
            return None
        if qualified in hf_datasets.CONCATENATE:
            parts = self._first_argument(node)
            tables = [hf_datasets.table_of(item) for item in (parts.items or ())] if parts is not None and parts.kind == TUPLE else []
            if not tables or any(t is None for t in tables):
                return None
            return hf_datasets.table(c for t in tables for c in t.floats)
        return hf_datasets.table()

    def _column_origin(self, node: cst.Call) -> Origin:
        key = ("column", id(node))
        found = self._origins.get(key)
        if found is None:
            found = self._origins[key] = hf_datasets.ColumnOrigin(node, self._describe)
        return found

    def _partial(self, node: cst.Call) -> Value | None:
        target = node.args[0].value if node.args and node.args[0].keyword is None else None
        if not isinstance(target, cst.Name) or any(a.keyword is None for a in node.args[1:]) \
                or any(a.star for a in node.args):
            return None
        keywords = tuple((a.keyword.value, self._current.get(id(a.value))) for a in node.args[1:])
        return make(INSTANCE, info=hf_datasets.Partial(target.value, keywords))

    def _dataset_method(self, method: str, table: Value, node: cst.Call, frame: Frame) -> Value | None:
        """A table's method: the same rows (``select``, ``shuffle``), fewer columns, or ``map``'s
        new float columns; anything else is unknown."""
        info = hf_datasets.table_of(table)
        if method in hf_datasets.SAME_ROWS:
            return table
        if method in hf_datasets.DROP_COLUMNS:
            return hf_datasets.table(hf_datasets.columns_left(method, info.floats, node))
        if method == hf_datasets.WITH_TRANSFORM:
            function = self._row_function(_arg(node, "transform", 0), frame)
            written = hf_datasets.assigned_keys(function[0].node) if function is not None else None
            if written is None:
                return None
            return hf_datasets.table(c for c in info.floats if c not in written)
        if method == hf_datasets.MAP:
            function = self._row_function(_arg(node, "function", 0), frame)
            if function is None:
                return hf_datasets.table(info.floats) if _arg(node, "function", 0) is None else None
            fn, keywords = function
            params = [*fn.node.params.posonly_params, *fn.node.params.params]
            if not params:
                return None
            bound = {params[0].name.value: (make(MAPPING), None, {})}
            for keyword, value in keywords:
                bound[keyword] = (value, None, {})
            for param, value in fn.defaults.items():
                bound.setdefault(param, (value, None, {}))
            returned, _, _ = self._invoke(fn, bound, frame, ())
            return hf_datasets.table((*info.floats, *hf_datasets.float_columns(returned)))
        return None

    def _row_function(self, arg, frame: Frame):
        """(the function of this file, the keywords a ``functools.partial`` binds) that ``map``
        or ``with_transform`` is given, or None."""
        if arg is None:
            return None
        value = self._current.get(id(arg.value))
        if value is not None and value.kind == INSTANCE and isinstance(value.info, hf_datasets.Partial):
            info = self._find_function(value.info.name, frame)
            return (info, value.info.keywords) if info is not None and info.cls is None else None
        if not isinstance(arg.value, cst.Name):
            return None
        info = self._find_function(arg.value.value, frame)
        return (info, ()) if info is not None and info.cls is None else None

    def _noised(self, method: str, node: cst.Call) -> Value | None:
        """``noise_scheduler.add_noise(latents, noise, timesteps)``: the promotion of the samples'
        and the noise's dtypes (library.SCHEDULER_NOISE_METHODS)."""
        (s_position, s_keyword), (n_position, n_keyword) = lib.SCHEDULER_NOISE_METHODS[method]
        samples = self._argument_value(node, s_keyword, s_position)
        noise = self._argument_value(node, n_keyword, n_position)
        if samples is None or noise is None or samples.kind != TENSOR or noise.kind != TENSOR \
                or not samples.dtypes or not noise.dtypes or (samples.dtypes | noise.dtypes) & {INT, BOOL}:
            return None
        dtypes, partial = promote(samples, noise)
        origin = samples.origin if samples.dtypes >= dtypes else noise.origin
        return self._keep_origins(make(TENSOR, dtypes, origin).replace(partial=partial), samples, noise)

    def _custom_collate(self, node: cst.BaseExpression, sample: Value | None, frame: Frame) -> Value | None:
        """``DataLoader(dataset, collate_fn=collate_fn)`` with ``collate_fn`` a function of this
        file: each batch is what it returns given the list of samples (torch's contract; the
        samples are ``__getitem__``'s results when the dataset is a class of the file, else
        unknown). A batch it builds itself (``torch.stack(masks)`` of float32 masks) keeps the
        dtypes it gets there, whatever the dataset is."""
        if not isinstance(node, cst.Name):
            return None
        info = self._find_function(node.value, frame)
        params = [*info.node.params.posonly_params, *info.node.params.params] if info is not None else []
        if not params or info.cls is not None:
            return None
        samples = make(TUPLE, element=sample, info="list")
        batch, _, _ = self._invoke(info, {params[0].name.value: (samples, None, {})}, frame, ())
        return batch

    def _refine_autocast(self, info: amp.AutocastInfo, node: cst.Call) -> amp.AutocastInfo:
        """Resolve ``dtype=amp_dtype`` through the flow when the literal reader could not."""
        if info.dtype is None:
            arg = _arg(node, "dtype", None)
            if arg is not None:
                value = self._current.get(id(arg.value))
                if value is not None and value.kind == DTYPE and value.certain:
                    from dtype_lint.facts.flow.values import LONG_NAMES

                    return dataclasses.replace(info, dtype=LONG_NAMES[value.dtype])
        return info

    def _prepared(self, value: Value | None) -> Value | None:
        """A module through ``accelerator.prepare()``: with ``Accelerator(mixed_precision="fp16"|"bf16")``
        accelerate runs its forward under autocast, which casts float32 inputs (``autocast`` on a
        module value: the region its forward runs in). Only ``mixed_precision="no"`` says there is
        none; a precision from a flag or ``accelerate config`` leaves the region unknown."""
        if value is None or value.kind != MODULE:
            return value
        if self._accelerate_autocast is None:
            found = precision_sources.sources_in(self.ctx.module, self.names, self.ctx)
            self._accelerate_autocast = precision_sources.autocast_wrapping(found, "accelerate") or (
                "" if precision_sources.accelerate_autocast_off(self.ctx.module, self.names) else MAYBE_AUTOCAST)
        return value.replace(autocast=self._accelerate_autocast) if self._accelerate_autocast else value

    def _first_argument(self, node: cst.Call) -> Value | None:
        for arg in node.args:
            if arg.keyword is None and not arg.star:
                return self._current.get(id(arg.value))
        return None

    def _torch_function(self, module: str, attr: str, node: cst.Call, frame: Frame):
        if module == "torch":
            if attr in ("set_default_dtype",):
                value = self._first_argument(node)
                if value is not None and value.kind == DTYPE and value.certain:
                    self.default_float = value.dtype
                return None
            if attr == "set_default_tensor_type":
                arg = node.args[0].value if node.args else None
                word = self._dtype_constant(arg) if arg is not None else None
                if word is None and isinstance(arg, cst.Attribute):
                    word = lib.TENSOR_TYPES.get(arg.attr.value)
                if word is None and arg is not None:
                    text = _string(arg)
                    word = lib.TENSOR_TYPES.get(text.rsplit(".", 1)[-1]) if text else None
                if word in FLOATS:
                    self.default_float = word
                return None
            if attr in lib.TENSOR_TYPES and attr != "Tensor" or attr == "Tensor":
                return make(TENSOR, (lib.TENSOR_TYPES[attr] if attr != "Tensor" else self.default_float,), self.origin(node))
            if attr in lib.LIKE_FACTORIES:
                dtypes, _, given = self._dtype_argument(node)
                if given:
                    return self._typed(TENSOR, node, None)
                like = self._first_argument(node)
                if attr == "randint_like":
                    return make(TENSOR, (INT,), self.origin(node))
                return like.replace(role=None, autocast=None) if like is not None and like.kind == TENSOR else None
            if attr in lib.TORCH_FLOAT_FACTORIES:
                return self._typed(TENSOR, node, self.default_float)
            if attr == "full":
                # torch.full takes the fill value's category: bool, int64, or the default float
                fill = _arg(node, "fill_value", 1)
                kind = _fill_kind(fill.value) if fill is not None else None
                return self._typed(TENSOR, node, self.default_float if kind == FP32 else kind)
            if attr == "arange":
                floats = any(_number_kind(a.value) == FP32 for a in node.args if a.keyword is None)
                return self._typed(TENSOR, node, self.default_float if floats else INT)
            if attr in lib.TORCH_INT_FACTORIES:
                return self._typed(TENSOR, node, INT)
            if attr in ("tensor", "as_tensor", "asarray"):
                return self._tensor_of_data(node)
            if attr == "from_numpy":
                data = self._first_argument(node)
                if data is not None and data.kind == NUMPY:
                    return self._entered(data, node)
                return make(TENSOR)
            if attr in lib.TORCH_PROMOTING:
                return self._promote_sequence(node)
            if attr in ("get_default_dtype",):
                return make(DTYPE, (self.default_float,), self.origin(node))
        dtypes, source, given = self._dtype_argument(node)
        if given and dtypes:
            return self._typed(TENSOR, node, None)
        return self._op_result(f"{module}.{attr}", node, frame)

    # -- op results from torch's semantics data (facts/semantics.py) ---------------------------
    def _semantics(self):
        if self._semantics_data is NOTHING:
            self._semantics_data = op_results.data_for(self.ctx)
        return self._semantics_data

    def _op_result(self, name: str, node: cst.Call, frame: Frame, receiver: Value | None = None) -> Value | None:
        """``name``'s result as torch's generated semantics give it (facts/flow/op_results.py):
        the output dtype over the operands' dtypes, what autocast makes of the op; unknown
        (a tensor of no known dtype) when the data does not know, None when it is no tensor op."""
        data = self._semantics()
        if data is None or data.entry(name) is None:
            return make(TENSOR) if data is not None and data.kind(name) == "tensor" else None
        operands = op_results.gather(data, name, node, lambda expr: self._current.get(id(expr)), self.names, receiver)
        autocast = self._autocast_dtype(frame)
        if autocast and (_arg(node, "dtype") is None):
            policy = data.autocast_policy(name, self._autocast_device(frame))
            floats_or_unknown = all(set(choice) <= FLOATS for choice in operands.choices[:1])
            if policy == "lower" and floats_or_unknown:
                return self._autocast_result(frame, certain=True, node=node)  # float inputs or unknown ones
            if policy == "fp32" and operands.choices and floats_or_unknown:
                if frame.autocast[-1].enabled is True:
                    return make(TENSOR, (FP32,), self.origin(node))  # autocast runs it in float32
                first = operands.values[0] if operands.values else None
                if frame.autocast[-1].enabled is None and first is not None and first.autocast in (FP16, BF16):
                    # ``autocast(enabled=flag)``: the operand is low only on runs where the region is
                    # on, and there autocast runs the op in float32 (DINO's loss under use_fp16)
                    return make(TENSOR, (FP32,), self.origin(node))
        dtype_argument = None
        if _arg(node, "dtype") is not None:
            dtype_argument = self._dtype_argument(node)[0]
        found = op_results.result_dtypes(data, name, operands, dtype_argument, self.default_float)
        if found is None:
            return make(TENSOR)
        return self._op_value(found, operands, node)

    def _op_value(self, found: tuple, operands, node: cst.Call) -> Value:
        dtypes, partial = found
        first = operands.values[0] if operands.values else None
        if first is not None and first.dtypes == dtypes:
            value = first.replace(partial=first.partial or partial)  # the first operand's dtype, its origins
            return value.replace(role=None) if value.role else value
        origins = []
        for dtype in sorted(dtypes, key=lambda d: "fp32 fp16 bf16 fp64 int bool".split().index(d)):
            source = next((v.origin_of(dtype) for v in operands.values if v.origin_of(dtype) is not None), None)
            origins.append((dtype, source or self.origin(node)))
        return Value(kind=TENSOR, dtypes=dtypes, partial=partial, origins=tuple(origins))

    def _autocast_device(self, frame: Frame) -> str:
        device = frame.autocast[-1].device if frame.autocast else None
        return device if device in ("cuda", "cpu") else "cuda"

    def _tensor_of_data(self, node: cst.Call) -> Value | None:
        dtypes, _, given = self._dtype_argument(node)
        if given:
            return self._typed(TENSOR, node, None)
        data_arg = _arg(node, "data", 0)
        if data_arg is None:
            return None
        category = _literal_category(_literal_kinds(data_arg.value))
        if category is not None:
            return make(TENSOR, (self.default_float if category == FP32 else category,), self.origin(node))
        data = self._current.get(id(data_arg.value))
        if hf_datasets.python_floats(data):
            return make(TENSOR, (self.default_float,), self._column_origin(node))  # Python floats: the default dtype
        if data is not None and data.kind == NUMPY:
            return self._entered(data, node).replace(autocast=None)
        if data is not None and data.kind == TENSOR:
            return data.replace(kind=TENSOR, role=None, autocast=None)
        return None

    def _entered(self, data: Value, node: cst.Call) -> Value:
        """A NumPy array made a tensor at ``node``: same dtypes; a float64 remembers where it entered."""
        origins = []
        for dtype, origin in data.origins:
            if dtype == FP64 and not isinstance(origin, EntryOrigin):
                key = ("entry", id(node), id(origin))
                entry = self._origins.get(key)
                if entry is None:
                    entry = self._origins[key] = EntryOrigin(origin, node)
                origin = entry
            origins.append((dtype, origin))
        return data.replace(kind=TENSOR, role=None, origins=tuple(origins))

    def _promote_sequence(self, node: cst.Call) -> Value | None:
        sequence = self._first_argument(node)
        if sequence is not None and sequence.kind == TUPLE and sequence.items is None and sequence.element is not None:
            # a list built in a loop (``chunks.append(x)``): its tensors have the element's dtypes
            element = sequence.element
            return element.replace(role=None) if element.kind == TENSOR and element.dtypes else None
        if sequence is None or sequence.kind != TUPLE or not sequence.items:
            return None
        result = None
        for item in sequence.items:
            if item is None or item.kind != TENSOR or not item.dtypes:
                return None
            if result is None:
                result = item
            else:
                dtypes, partial = promote(result, item)
                # a dtype the result has on every path comes from the operand that has it on every
                # path (``cat([latents, mask])`` is float32 because of the float32 ``mask``)
                sources = sorted((result, item), key=lambda value: not value.certain)
                result = self._keep_origins(make(TENSOR, dtypes).replace(partial=partial), *sources)
        return result

    def _numpy_function(self, module: str, attr: str, node: cst.Call):
        if attr in lib.DTYPE_WORDS and module == "numpy":
            return make(NUMPY, (lib.DTYPE_WORDS[attr],), self.origin(node))
        if module in ("numpy", "numpy.random"):
            if module == "numpy.random" and attr == "default_rng" or attr == "RandomState":
                return make(NUMPY, info="rng")
            if attr in lib.NUMPY_INT_FACTORIES:
                return self._typed(NUMPY, node, INT)
            if attr in lib.NUMPY_FLOAT_FACTORIES:
                return self._typed(NUMPY, node, FP64)
            if attr == "full":
                # np.full(shape, fill): the fill value's dtype (False -> bool, 0 -> int64, 0.5 -> float64)
                fill = _arg(node, "fill_value", 1)
                kind = _fill_kind(fill.value) if fill is not None else None
                return self._typed(NUMPY, node, FP64 if kind == FP32 else kind)
            if attr == "full_like":
                like = self._first_argument(node)
                known = like.dtypes if like is not None and like.kind == NUMPY and like.certain else None
                return self._typed(NUMPY, node, next(iter(known)) if known else None)
            if attr == "arange":
                floats = any(_number_kind(a.value) == FP32 for a in node.args if a.keyword is None)
                return self._typed(NUMPY, node, FP64 if floats else INT)
            if attr in lib.NUMPY_ARRAY_CONSTRUCTORS:
                dtypes, _, given = self._dtype_argument(node)
                if given:
                    return self._typed(NUMPY, node, None)
                first = _arg(node, "object", 0)
                category = _literal_category(_literal_kinds(first.value)) if first is not None else None
                if category is not None:
                    return make(NUMPY, (FP64 if category == FP32 else category,), self.origin(node))
                data = self._current.get(id(first.value)) if first is not None else None
                if data is not None and data.kind == NUMPY:
                    return data
                if data is not None and data.kind == IMAGE and data.dtypes:
                    return make(NUMPY, data.dtypes, self.origin(node))  # ``np.asarray(img)``: its pixels
                if hf_datasets.python_floats(data):
                    return make(NUMPY, (FP64,), self._column_origin(node))  # Python floats: NumPy's float64
                return None
            if attr not in lib.NUMPY_SAME_FUNCTIONS and attr[:1].islower():
                # ufuncs and the like (np.sin, np.clip...): the array's dtype.
                first = self._first_argument(node)
                return first if first is not None and first.kind == NUMPY and first.info != "rng" else None
            if attr in lib.NUMPY_SAME_FUNCTIONS:
                first = self._first_argument(node)
                if first is not None and first.kind == NUMPY:
                    return first
                if first is not None and first.kind == TUPLE and first.items and all(
                    i is not None and i.kind == NUMPY for i in first.items
                ):
                    result = first.items[0]
                    for item in first.items[1:]:
                        dtypes, partial = promote(result, item)
                        result = self._keep_origins(make(NUMPY, dtypes).replace(partial=partial), result, item)
                    return result
        return None

    def _generic_torch(self, qualified: tuple, node: cst.Call) -> Value | None:
        return None

    def _optimizer(self, qualified: str, node: cst.Call, frame: Frame) -> Value:
        params = self._params_in(node)
        eps = _arg(node, "eps")
        function = frame.function
        target = params.target if params is not None else None
        info = OptimizerInfo(node=node, qualified=qualified, target=target, params=params,
                             eps=eps.value if eps is not None else None, function=function, order=self._tick())
        info = self._add_optimizer(info)
        dtypes = params.dtypes if params is not None else frozenset()
        origins = params.origins if params is not None else ()
        return Value(kind=OPTIMIZER, dtypes=dtypes, partial=params.partial if params is not None else False,
                     origins=origins, target=target, info=info, role=params.role if params is not None else None)

    def _params_in(self, node: cst.Call) -> Value | None:
        """The PARAMS value among an optimizer's arguments (``model.parameters()``, groups)."""
        first = _arg(node, "params", 0)
        if first is None:
            return None
        found: list[Value] = []
        stack = [first.value]
        while stack and len(found) < 4:
            current = stack.pop()
            value = self._current.get(id(current))
            if value is not None and value.kind == PARAMS:
                found.append(value)
                continue
            if value is not None and value.kind == MODULE:
                continue
            if value is not None and value.kind in (TUPLE, MAPPING):
                held = _params_held(value)  # param groups built elsewhere (``grouped``)
                if held:
                    found.extend(held)
                    continue
            stack.extend(reversed(child_nodes(current)))  # (node.children rebuilds the node)
        if not found:
            return None
        result = found[0]
        for other in found[1:]:
            result = join(result, other)
        return result

    def _from_pretrained(self, module: str, node: cst.Call) -> Value | None:
        owner = module.rsplit(".", 1)[-1]
        if lib.TOKENIZER.search(owner) or lib.PROCESSOR.search(owner):
            return make(TOKENIZER, info="processor" if lib.PROCESSOR.search(owner) else "tokenizer")
        if lib.NOT_A_MODEL.search(owner) and not owner.endswith("Pipeline") or owner == "PeftModel":
            return None if owner != "PeftModel" else self._first_argument(node)
        default = FP32 if module.startswith("diffusers") else None
        for keyword in ("torch_dtype", "dtype"):
            dtypes, source, given = self._dtype_argument(node, keyword)
            if given:
                if not dtypes:
                    return make(MODULE, info=owner)
                if source is not None and len(dtypes) > 1:
                    loaded = Value(kind=MODULE, dtypes=dtypes, partial=source.partial, origins=source.origins, info=owner)
                else:
                    loaded = make(MODULE, dtypes, self.origin(node), info=owner)
                return self._with_passed_components(loaded, module, node)
        if _arg(node, "load_in_8bit") is not None or _arg(node, "load_in_4bit") is not None or _arg(node, "quantization_config") is not None:
            return make(MODULE, info=owner, role="quantized")
        return make(MODULE, (default,) if default else (), self.origin(node) if default else None, info=owner)

    def _with_passed_components(self, pipeline: Value, module: str, node: cst.Call) -> Value:
        """A diffusers pipeline loaded with ``torch_dtype=`` keeps the models passed to it in their
        own dtypes (library.PIPELINE_COMPUTE_COMPONENTS): they are its ``keys``/``items``, which a
        later ``pipeline.to(dtype)`` casts with the rest (``_cast_value``)."""
        if not (module.startswith("diffusers") and module.endswith("Pipeline")):
            return pipeline
        keys, items = [], []
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in lib.PIPELINE_COMPUTE_COMPONENTS:
                continue
            component = self._current.get(id(arg.value))
            if component is not None and component.kind == MODULE:
                keys.append(arg.keyword.value)
                items.append(component)
        return pipeline.replace(keys=tuple(keys), items=tuple(items)) if keys else pipeline

    def _autocast_dtype(self, frame: Frame) -> str | None:
        for info in reversed(frame.autocast):
            if info.enabled is False:
                return None
            return SHORT_NAMES.get(info.effective_dtype or "", "auto")
        return None

    def _autocast_result(self, frame: Frame, certain: bool, node=None) -> Value:
        dtype = self._autocast_dtype(frame)
        certain = certain and bool(frame.autocast) and frame.autocast[-1].enabled is True  # ``enabled=flag``: on some runs only
        if dtype in (FP16, BF16):
            value = make(TENSOR, (dtype,), self.origin(node) if node is not None else None, autocast=dtype)
            return value if certain else value.replace(partial=True)
        return make(TENSOR, autocast=dtype)

    def _module_call(self, module: Value, node: cst.Call, frame: Frame) -> Value | None:
        info = module.info if isinstance(module.info, str) else ""
        forward = self._local_forward(info, frame)
        if forward is not None:
            # ``gate(x)`` on an instance of a module class of this file runs its ``forward`` with
            # ``self`` as the caller holds it (cast with ``.half()``, under the caller's autocast).
            key = dotted_name(node.func)
            result = self._call_local(forward, node, frame, self_value=module, self_key=key)
            if result is not None:
                return result
        first = self._first_argument(node)
        if module.items is not None and info.endswith("Sequential") and len(node.args) == 1 and first is not None:
            return self._run_layers(module, first, frame, node)
        return self._layer_result(module, first, frame, node)

    def _run_layers(self, container: Value, given: Value | None, frame: Frame, node: cst.Call) -> Value | None:
        """An ``nn.Sequential`` called on ``given``: each layer on the previous one's output."""
        value = given
        for layer in container.items:
            if value is None or layer is None or layer.kind != MODULE:
                return None
            value = self._apply_layer(layer, value, frame, node)
        return value

    def _apply_layer(self, layer: Value, given: Value, frame: Frame, node: cst.Call) -> Value | None:
        """One layer of a container run on a value (not on a call's arguments)."""
        info = layer.info if isinstance(layer.info, str) else ""
        forward = self._local_forward(info, frame)
        if forward is not None:
            params = [*forward.node.params.posonly_params, *forward.node.params.params]
            if len(params) < 2:
                return None
            bound = {params[0].name.value: (layer, None, {}), params[1].name.value: (given, None, {})}
            for name, default in forward.defaults.items():
                bound.setdefault(name, (default, None, {}))
            returns, _, _ = self._invoke(forward, bound, frame, frame.autocast)
            return returns
        if layer.items is not None and info.endswith("Sequential"):
            return self._run_layers(layer, given, frame, node)
        return self._layer_result(layer, given, frame, node)

    def _layer_result(self, module: Value, first: Value | None, frame: Frame, node: cst.Call) -> Value | None:
        """What a torch.nn layer (or a model the analysis does not run) gives for input ``first``."""
        info = module.info if isinstance(module.info, str) else ""
        layer = info.rsplit(".", 1)[-1] if info.startswith("torch.nn") else ""
        if lib.LOSS_CLASS.search(layer):
            return first.replace(role=None) if first is not None and first.kind == TENSOR else None
        data = self._semantics() if layer else None
        entry = data.entry(info) if data is not None else None
        autocast_on = bool(self._autocast_dtype(frame))
        if lib.parameterless(info) and not (
                autocast_on and (data is None or data.autocast_policy(info, self._autocast_device(frame)) is not None)):
            # no weights: the output has the input's dtype (``nn.Dropout``, ``nn.ReLU``, pooling),
            # also under autocast unless autocast runs the op in float32 (softmax, softplus)
            return first.replace(role=None) if first is not None and first.kind == TENSOR else None
        if autocast_on:
            lowers = entry is not None and data.autocast_policy(info, self._autocast_device(frame)) == "lower"
            return self._autocast_result(frame, certain=lowers, node=node)
        if entry is not None and entry.get("out") == "module":
            # the module's parameters decide (``Linear``, ``LayerNorm``: a float32 LayerNorm gives
            # a float16 input back in float16; a mix torch rejects keeps the parameters' dtype)
            if not module.dtypes:
                return make(TENSOR)
            if first is not self._first_argument(node):
                # a layer inside a container run on the previous layer's output, not the call's
                return module.replace(kind=TENSOR, role=None, info=None, target=None, items=None, keys=None)
            operands = op_results.gather(data, info, node, lambda expr: self._current.get(id(expr)), self.names)
            if op_results.raises_for(data, info, operands, module=module.dtypes) is not None:
                return make(TENSOR)  # torch raises here (a rule reports it): nothing flows on
            found = op_results.result_dtypes(data, info, operands, None, self.default_float, module=module.dtypes)
            if found is not None and found[0] != module.dtypes:
                return self._op_value(found, operands, node)
            autocast = module.autocast if module.autocast != MAYBE_AUTOCAST else None
            return module.replace(kind=TENSOR, role=None, info=None, target=None, items=None, keys=None,
                                  autocast=autocast)
        if entry is not None and entry.get("out") == "same":  # no parameters: ``Dropout``, ``ReLU``
            return first.replace(role=None) if first is not None and first.kind == TENSOR else make(TENSOR)
        if not module.dtypes:
            return make(TENSOR)
        # A whole model may upcast its outputs (HF upcasts logits); a hint, not a certainty.
        return Value(kind=TENSOR, dtypes=module.dtypes, partial=True, origins=module.origins)

    def _plain_call(self, name: str, callee: Value | None, node: cst.Call, frame: Frame) -> Value | None:
        if callee is not None:
            if callee.kind == MODULE:
                return self._module_call(callee, node, frame)
            if callee.kind == TOKENIZER:
                return self._tokenize(callee, node, name)
            if callee.kind == CLASS:
                cls = self._find_class(callee.info, frame)
                if cls is not None:
                    return self._construct(cls, node, frame, None)
            if callee.kind == INSTANCE and isinstance(callee.info, str):
                # ``processor(ids, scores)``: an instance of a class of this file runs its ``__call__``
                cls = self._find_class(callee.info, frame)
                method = cls.methods.get("__call__") if cls is not None else None
                info = self._function_info(method) if method is not None else None
                if info is not None:
                    key = dotted_name(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
                    return self._call_local(info, node, frame, callee, key)
            return None
        info = self._find_function(name, frame)
        if info is not None:
            return self._call_local(info, node, frame)
        cls = self._find_class(name, frame)
        if cls is not None:
            return self._construct(cls, node, frame, None)
        if lib.MODEL_NAME.search(name) and self._autocast_dtype(frame) in (FP16, BF16) \
                and not self.names.qualified_names(node.func):
            # ``net_g(x)`` under autocast: an unknown model runs its layers in the autocast dtype
            return self._autocast_result(frame, certain=False, node=node)
        if name == "dict":
            keys: list[str | None] = []
            values: list[Value | None] = []
            for arg in node.args:
                given = self._current.get(id(arg.value))
                if arg.keyword is not None:
                    keys.append(arg.keyword.value)
                    values.append(given)
                elif given is not None and given.kind == MAPPING and given.keys is not None:
                    keys.extend(given.keys)
                    values.extend(given.items)
                else:
                    keys.append(None)
                    values.append(given.element if given is not None and given.kind == MAPPING else None)
            return _mapping(keys, values)
        if name in ("list", "tuple", "filter", "iter", "sorted", "reversed"):
            sequence = self._current.get(id(node.args[-1].value)) if node.args else None
            return sequence if sequence is not None and sequence.kind in (PARAMS, TUPLE) else None
        if name == "next" and node.args:
            sequence = self._current.get(id(node.args[0].value))
            if sequence is not None and (sequence.kind == PARAMS or sequence.info == loaders.LOADER):
                return self._element(sequence, node.args[0].value)
            return None
        if name in ("enumerate", "zip"):
            values = [self._current.get(id(a.value)) for a in node.args if a.keyword is None]
            elements = [self._element(v, a.value) for v, a in zip(values, node.args)]
            if name == "enumerate":
                item = make(TUPLE, items=(None, elements[0] if elements else None))
            else:
                item = make(TUPLE, items=tuple(elements))
            return make(TUPLE, items=(), element=item, info=name)
        if name == "getattr" and len(node.args) >= 2:
            if self.names.resolve_dotted(dotted_name(node.args[0].value) or "") == ("torch",):
                text = _string(node.args[1].value)
                if text is not None:
                    word = lib.DTYPE_WORDS.get(text)
                    return make(DTYPE, (word,), self.origin(node)) if word else make(DTYPE)
                # ``getattr(torch, cfg.architecture.backbone_dtype)``: the dtype names the config gives
                words = [lib.DTYPE_WORDS.get(s.value) if isinstance(s.value, str) else None
                         for s in config_values.settings_of(self.ctx, node.args[1].value)]
                if words and all(words):
                    return make(DTYPE, tuple(sorted(set(words))), self.origin(node))
                return make(DTYPE)
            return None
        if lib.image_processor_call(name, node):
            return self._image_features(node)
        if name.endswith("tokenizer") or name.endswith("processor"):
            return self._tokenize(make(TOKENIZER, info="processor" if name.endswith("processor") else "tokenizer"), node)
        return None

    def _image_features(self, node: cst.Call) -> Value:
        """An image processor's BatchFeature: ``pixel_values`` float32 (library.image_processor_call)."""
        element = make(TENSOR, (FP32,), self.origin(node))
        return make(BATCH, (FP32,), self.origin(node), info=IMAGE_BATCH, element=element)

    def _tokenize(self, tokenizer: Value, node: cst.Call, name: str = "") -> Value:
        if tokenizer.info == "processor" and lib.image_processor_call(name, node):
            return self._image_features(node)
        if tokenizer.info == "processor" and (_arg(node, "images") is not None or _arg(node, "audio") is not None):
            element = make(TENSOR, (self.default_float,), self.origin(node))
            return make(BATCH, (INT, self.default_float), self.origin(node), info="processor", element=element)
        return make(BATCH, (INT,), self.origin(node), info="tokenizer")

    def _method(self, func: cst.Attribute, receiver: Value | None, node: cst.Call, frame: Frame, statement: bool):
        method = func.attr.value
        if receiver is not None and receiver.info == AUTOENCODER_OUTPUT and method in ("sample", "mode"):
            return receiver.element  # ``latent_dist.sample()``
        key = dotted_name(func.value) if isinstance(func.value, (cst.Name, cst.Attribute)) else None
        if method in lib.SCHEDULER_NOISE_METHODS and (receiver is None or receiver.kind == "unknown") \
                and lib.SCHEDULER_NAME.search(key or ""):
            return self._noised(method, node)
        if method in ("from_pretrained", "from_config", "from_single_file"):
            return self._from_pretrained(dotted_name(func.value) or "", node)
        if (receiver is None or receiver.kind in (UNKNOWN, INSTANCE)) and lib.image_processor_call(method, node):
            return self._image_features(node)  # ``self.feature_extractor(images, return_tensors="pt")``
        kind = receiver.kind if receiver is not None else None
        if key is None and kind == MODULE:
            key = _chained_module_key(func.value)
        # Module (or a bare ``x.half()`` statement: only a module cast means anything there).
        if kind == MODULE or (statement and kind is None and self._is_cast(method, node)):
            return self._module_method(method, receiver, key, node, frame, statement)
        if kind == TENSOR:
            return self._tensor_method(method, receiver, node, frame)
        if kind == MAPPING and method == "get" and node.args and isinstance(receiver.info, checkpoints.LoadedCheckpoint):
            return checkpoints.indexed(receiver.info, node.args[0].value, node, self.origin)  # ``ckpt.get("ema")``
        if kind == MAPPING and not isinstance(receiver.info, checkpoints.LoadedCheckpoint) or kind == TUPLE:
            found = self._container_method(method, receiver, key, node, frame)
            if found is not NOTHING:
                return found
        if kind == NUMPY:
            return self._numpy_method(method, receiver, node)
        if kind == IMAGE:
            if method == "convert" and node.args:
                mode = lib.PIL_MODE_DTYPES.get(_string(node.args[0].value))
                return make(IMAGE, (mode,) if mode else (), self.origin(node))
            return receiver if method in lib.PIL_SAME_MODE_METHODS else None
        if kind == BATCH:
            if method == "to":
                dtypes, source, given = self._dtype_argument(node, "dtype", None)
                positional = [self._current.get(id(a.value)) for a in node.args if a.keyword is None]
                for value in positional:
                    if value is not None and value.kind == DTYPE:
                        dtypes, given = value.dtypes, True
                if given and receiver.info in ("processor", IMAGE_BATCH):
                    element = make(TENSOR, dtypes, self.origin(node)) if dtypes else make(TENSOR)
                    return receiver.replace(element=element)
                return receiver
            if method in ("items",):
                tensor = make(TENSOR, (INT,), receiver.origin) if receiver.info == "tokenizer" else None
                return make(TUPLE, items=(), element=make(TUPLE, items=(None, tensor)), info="items")
            if method in ("values",) and receiver.info == "tokenizer":
                return make(TUPLE, items=(), element=make(TENSOR, (INT,), receiver.origin), info="values")
            if method == "get":
                return self._field(receiver, _string(node.args[0].value) if node.args else None, node)
            return None
        if kind == TOKENIZER:
            if method in ("encode", "__call__", "encode_plus", "batch_encode_plus", "apply_chat_template"):
                if method == "encode" or method == "apply_chat_template":
                    return make(TENSOR, (INT,), self.origin(node)) if _arg(node, "return_tensors") is not None else None
                return self._tokenize(receiver, node)
            return None
        if kind == OPTIMIZER or kind == SCALER:
            if kind == SCALER and method == "scale":
                return self._first_argument(node)
            return None
        if kind in (INSTANCE, MODULE) or (kind is None and key == "self" and frame.cls is not None):
            pass
        if kind == NUMPY and receiver.info == "rng":
            return None
        # Methods of user classes: ``self.helper(x)``, ``trainer.fit()``.
        class_name = receiver.info if receiver is not None and kind in (INSTANCE,) else None
        if class_name is None and key == "self" and frame.cls is not None:
            class_name = frame.cls.name
        if class_name is not None:
            cls = self._find_class(class_name, frame)
            method_node = cls.methods.get(method) if cls is not None else None
            info = self._function_info(method_node) if method_node is not None else None
            if info is not None:
                self_value = receiver if receiver is not None else self._instance(cls, None)
                return self._call_local(info, node, frame, self_value, key)
            return None
        if receiver is not None and receiver.kind == TUPLE and method in ("items", "values"):
            return None
        if key is not None and method in ("prepare", "prepare_model") and key.split(".")[-1] in ("accelerator", "fabric"):
            values = [self._current.get(id(a.value)) for a in node.args if a.keyword is None and not a.star]
            values = [self._prepared(value) for value in values]
            if len(values) == 1:
                return values[0]
            return make(TUPLE, items=tuple(values))
        if key is not None and key.split(".")[-1] in ("accelerator", "fabric") and method in ("unwrap_model", "setup"):
            model = self._first_argument(node)
            keep = _arg(node, "keep_fp32_wrapper", 1) if method == "unwrap_model" else None
            if keep is not None and model is not None and model.kind == MODULE and amp.literal_bool(keep.value) is False:
                # accelerate's contract: ``keep_fp32_wrapper=False`` hands back the bare module, its
                # forward no longer under prepare's autocast (the default, True since accelerate
                # 0.16, keeps it; huggingface/accelerate#1025, diffusers#1566).
                return model.replace(autocast=None)
            return model
        if key is not None and key.split(".")[-1] in ("accelerator",) and method == "autocast":
            info = amp.autocast_info(self.names, node)
            return make(AUTOCAST, info=info) if info is not None else None
        if kind is None and method in lib.CAST_METHODS and not node.args:
            # Unknown receiver: the result has the cast's dtype; model-like names are modules.
            if _looks_like_module(func.value):
                return self._module_method(method, receiver, key, node, frame, statement)
            return make(TENSOR, (lib.CAST_METHODS[method],), self.origin(node))
        if kind is None and method in ("parameters", "named_parameters") and not node.args:
            # An unknown model's parameters: dtype unknown, but loop variables are parameters.
            return Value(kind=PARAMS, target=key, info="named" if method == "named_parameters" else None)
        if kind is None and method in ("argmax", "argmin", "argsort"):
            # ``dim=`` is torch's spelling, ``axis=`` NumPy's; without either, in a file that uses
            # NumPy, the receiver may be an array: only a hint then.
            if _arg(node, "axis") is not None:
                return make(NUMPY, (INT,), self.origin(node))
            ambiguous = _arg(node, "dim") is None and self.names.is_imported("numpy")
            return make(TENSOR, (INT,), self.origin(node)).replace(partial=ambiguous)
        if kind is None and method in lib.TENSOR_INT_METHODS and not node.args:
            return make(TENSOR, (lib.TENSOR_INT_METHODS[method],), self.origin(node))
        if kind is None and method in ("numpy",):
            return None
        if kind is None and method == "to":
            found = self._to_dtypes(node)
            if found and found[0] and _looks_like_module(func.value):
                return self._module_method(method, receiver, key, node, frame, statement)
            if found and found[0]:
                # the low dtypes only a function's evidence gives keep it as their origin (rules filter them)
                value = self._evidence_kept(make(TENSOR, found[0], self.origin(node)), found[1])
                return value.replace(partial=True) if found[1] is not None and found[1].partial else value
        if kind is None and method == "astype":
            dtypes = self._astype_dtypes(node)
            return make(NUMPY, dtypes, self.origin(node)) if dtypes else None
        return None

    def _container_method(self, method: str, receiver: Value, key: str | None, node: cst.Call, frame: Frame):
        """Methods of a list or a dict: what they return, and how they change the one named ``key``
        (NOTHING: not one the analysis reads)."""
        args = [self._current.get(id(a.value)) for a in node.args if a.keyword is None and not a.star]
        if receiver.kind == MAPPING:
            if method in ("get", "pop") and node.args:
                found = _keyed(receiver, _string(node.args[0].value))
                return join(found, args[1]) if len(args) > 1 else found
            if method == "values":
                return make(TUPLE, items=(), element=receiver.element, info="values")
            if method == "items":
                return make(TUPLE, items=(), element=make(TUPLE, items=(None, receiver.element)), info="items")
            if method == "copy":
                return receiver
            if method in ("update", "setdefault") and key is not None:
                if method == "update" and len(args) == 1 and args[0] is not None and args[0].kind == MAPPING \
                        and args[0].keys is not None and receiver.keys is not None:
                    merged = dict(zip(receiver.keys, receiver.items))
                    merged.update(zip(args[0].keys, args[0].items))
                    self._store(key, _mapping(list(merged), list(merged.values())), frame)
                else:
                    given = [v for v in args if v is not None and v.kind == MAPPING]
                    self._store(key, _mapping([None], [_joined([receiver.element, *(v.element for v in given)])]), frame)
            return NOTHING
        if receiver.info in ITERATORS:
            return NOTHING
        if method in ("append", "insert", "extend") and key is not None and args:
            added = args[-1]
            if method == "extend":
                grown = _concatenated([receiver, added], "list")
            else:
                grown = _concatenated([receiver, make(TUPLE, items=(added,))], "list")
            if grown is not None and grown.kind == TUPLE and grown.items is not None:
                grown = make(TUPLE, element=_joined(grown.items), info="list")  # (a loop appends any number)
            self._store(key, grown, frame)
            return None
        if method == "pop":
            if receiver.items and (not node.args or isinstance(node.args[0].value, cst.Integer)):
                position = int(node.args[0].value.value) if node.args else -1
                if -len(receiver.items) <= position < len(receiver.items):
                    if key is not None:
                        rest = list(receiver.items)
                        rest.pop(position)
                        self._store(key, make(TUPLE, items=tuple(rest), info=receiver.info), frame)
                    return receiver.items[position]
                return None
            return _joined(receiver.items) if receiver.items else receiver.element
        if method == "copy":
            return receiver
        return NOTHING

    def _store(self, key: str, value: Value | None, frame: Frame) -> None:
        """A list or dict changed in place: the caller of this frame sees it too when it passed it."""
        frame.env[key] = value
        head = key.split(".", 1)[0]
        if frame.function is not None and (head in frame.params or head == "self"):
            frame.mutations[key] = lowp_evidence.without_evidence(value)

    def _is_cast(self, method: str, node: cst.Call) -> bool:
        if method in lib.CAST_METHODS and not node.args:
            return True
        if method in ("to", "type"):
            dtypes = self._to_dtypes(node)
            return bool(dtypes and dtypes[0])
        return False

    def _to_dtypes(self, node: cst.Call) -> tuple[frozenset, Value | None] | None:
        """The dtypes ``.to(...)`` / ``.type(...)`` cast to: (dtypes, source value); None: not a cast.

        A positional argument that is unknown and spelled like a dtype (``weight_dtype``,
        ``args.dtype``) makes the result unknown; anything else unknown is taken for a device.
        """
        for arg in node.args:
            if arg.star:
                return (frozenset(), None)
            if arg.keyword is not None and arg.keyword.value != "dtype":
                continue
            value = self._current.get(id(arg.value))
            if value is not None and value.kind == DTYPE:
                return (value.dtypes, value) if value.dtypes else (frozenset(), None)
            if value is not None and value.kind == TENSOR and arg.keyword is None:
                return (value.dtypes, value) if value.dtypes else (frozenset(), None)
            text = _string(arg.value)
            if text is not None:
                word = lib.DTYPE_WORDS.get(text.replace("torch.", "")) or lib.TENSOR_TYPES.get(text.rsplit(".", 1)[-1])
                if word is not None:
                    return (frozenset({word}), None)
                continue
            if isinstance(arg.value, cst.Attribute) and arg.value.attr.value in lib.TENSOR_TYPES:
                return (frozenset({lib.TENSOR_TYPES[arg.value.attr.value]}), None)
            if isinstance(arg.value, cst.Name) and arg.value.value in _PYTHON_TYPES and not self.names.qualified_names(arg.value):
                return (frozenset({_PYTHON_TYPES[arg.value.value]}), None)  # ``.to(int)``: int64
            spelled = self.ctx.code_for(arg.value) if arg.keyword is not None else (dotted_name(arg.value) or "")
            if arg.keyword is not None or "dtype" in spelled.lower() or "precision" in spelled.lower():
                return (frozenset(), None)
        return None

    def _cast_value(self, base: Value | None, kind: str, method: str, node: cst.Call) -> Value | None | object:
        """The value after a cast method; NOTHING when ``method`` does not cast."""
        if method in lib.CAST_METHODS and not node.args:
            dtypes, source = frozenset({lib.CAST_METHODS[method]}), None
        elif method in ("to", "type") or method in lib.TENSOR_INT_METHODS and kind == TENSOR and not node.args:
            if method in lib.TENSOR_INT_METHODS:
                dtypes, source = frozenset({lib.TENSOR_INT_METHODS[method]}), None
            else:
                found = self._to_dtypes(node)
                if found is None:
                    return NOTHING
                dtypes, source = found
        else:
            return NOTHING
        fields = {}
        if base is not None:
            fields = {"role": base.role, "info": base.info, "target": base.target}
        if not dtypes:
            return _retyped(Value(kind=kind, **fields, items=base.items if base is not None else None,
                                  keys=base.keys if base is not None else None), frozenset(), (), False)
        value = self._evidence_kept(make(kind, dtypes, self.origin(node), **fields), source)
        value = value.replace(partial=True) if source is not None and source.partial else value
        if kind == MODULE and base is not None and base.items is not None:
            # a container's cast casts every layer it holds
            value = _retyped(value.replace(items=base.items, keys=base.keys), value.dtypes, value.origins, value.partial)
        return value

    def _module_method(self, method, receiver, key, node, frame, statement) -> Value | None:
        cast = self._cast_value(receiver, MODULE, method, node)
        if cast is not NOTHING:
            if cast is not None and key is not None and "." in key and cast.dtypes:
                cast = self._as_part(cast, node)  # ``model.backbone.half()``: one part of the model
            if key is not None:
                self._add_cast(Cast(
                    target=key, dtypes=cast.dtypes, before=receiver, node=node, in_place=statement,
                    function=frame.function, order=self._tick(),
                ))
                self.mutate(key, cast, frame)
            return cast
        if method == "register_buffer" and key is not None and len(node.args) >= 2 and _string(node.args[0].value):
            buffer = self._current.get(id(node.args[1].value))
            if buffer is not None and buffer.kind == TENSOR:
                buffer = buffer.replace(role="buffer")  # a module cast casts its floating buffers
            self.assign(f"{key}.{_string(node.args[0].value)}", buffer, frame)
            return None
        if method in ("parameters", "named_parameters"):
            module = receiver
            dtypes, origins = module.dtypes, module.origins
            parts = self._parameter_parts(module, key, frame) if module is not None else ()
            if parts and dtypes:
                # some submodules keep a low dtype of their own: the parameters mix dtypes
                dtypes = dtypes | {d for d, _ in parts}
                origins = merge_parts(origins, parts)
            return Value(kind=PARAMS, dtypes=dtypes, partial=module.partial, origins=origins,
                         target=key, info="named" if method == "named_parameters" else None, role=module.role,
                         parts=parts)
        if method in lib.MODULE_SELF_METHODS or method in ("to", "type"):
            return receiver  # a device move or a no-op: same module, same dtype
        if method == "_apply":
            # ``module._apply(fn)`` converts every parameter and buffer with ``fn`` (what ``.half()``
            # is built on): the dtype ``fn`` casts to when it is a readable lambda, else unknown
            dtypes = self._applied_cast(node)
            changed = make(MODULE, dtypes, self.origin(node) if dtypes else None, info=receiver.info if receiver else None)
            if receiver is not None:
                changed = _retyped(changed.replace(items=receiver.items, keys=receiver.keys), changed.dtypes,
                                   changed.origins, False)
            if key is not None:
                self.mutate(key, changed, frame)
            return changed
        if method in ("forward", "__call__"):
            return self._module_call(receiver, node, frame)
        if method == "generate":
            return make(TENSOR, (INT,), self.origin(node))
        if method in ("encode", "decode") and receiver is not None and receiver.dtypes and (
                not receiver.info or isinstance(receiver.info, str) and lib.AUTOENCODER_CLASS.search(receiver.info)
                and self._find_class(receiver.info, frame) is None):
            # an autoencoder's ``vae.encode(x).latent_dist.sample()`` / ``vae.decode(z).sample``:
            # computed by its weights, so in its dtype (``info``: a class of this file runs its own)
            latents = Value(kind=TENSOR, dtypes=receiver.dtypes, partial=receiver.partial, origins=receiver.origins)
            return make(TUPLE, info=AUTOENCODER_OUTPUT, element=latents)
        if method in ("modules", "children", "named_modules", "named_children"):
            sub = receiver.replace(partial=True) if receiver.dtypes else receiver
            element = make(TUPLE, items=(None, sub)) if method.startswith("named") else sub
            return make(TUPLE, items=(), element=element, info="modules")
        if receiver is not None and receiver.info and frame is not None:
            cls = self._find_class(receiver.info, frame) if isinstance(receiver.info, str) else None
            method_node = cls.methods.get(method) if cls is not None else None
            info = self._function_info(method_node) if method_node is not None else None
            if info is not None and method != "forward":
                return self._call_local(info, node, frame, receiver, key)
        return None

    def _applied_cast(self, node: cst.Call) -> frozenset:
        """The dtype ``fn`` of ``module._apply(fn)`` casts floating tensors to: ``lambda t: t.half()``,
        ``lambda t: t.to(torch.bfloat16) if t.is_floating_point() else t``; empty when unknown."""
        fn = node.args[0].value if node.args else None
        if not isinstance(fn, cst.Lambda):
            return frozenset()
        body = fn.body
        if isinstance(body, cst.IfExp):  # the cast on one side, the tensor unchanged on the other
            params = {p.name.value for p in fn.params.params}
            sides = [body.body, body.orelse]
            unchanged = [side for side in sides if isinstance(side, cst.Name) and side.value in params]
            body = next((side for side in sides if side not in unchanged), None) if len(unchanged) == 1 else None
        if not isinstance(body, cst.Call) or not isinstance(body.func, cst.Attribute):
            return frozenset()
        method = body.func.attr.value
        if method in lib.CAST_METHODS and not body.args:
            return frozenset({lib.CAST_METHODS[method]})
        if method in ("to", "type"):  # (the lambda's body is not run: read the dtype as written)
            words = {self._dtype_constant(a.value) for a in body.args if a.keyword is None or a.keyword.value == "dtype"}
            words.discard(None)
            return frozenset(words) if len(words) == 1 else frozenset()
        return frozenset()

    def _tensor_method(self, method: str, receiver: Value, node: cst.Call, frame: Frame) -> Value | None:
        cast = self._cast_value(receiver, TENSOR, method, node)
        if cast is not NOTHING:
            if cast is not None and receiver.certain and cast.dtypes == receiver.dtypes \
                    and isinstance(receiver.origin_of(receiver.dtype), EntryOrigin):
                # a cast to the dtype it has returns the tensor itself: still NumPy's float64
                # (``torch.from_numpy(features).double()``)
                return receiver.replace(role=None, target=None, autocast=None)
            if cast is not None:
                return cast.replace(role=None, target=None, autocast=None)
            return cast
        if method == "view" and len(node.args) == 1 and not node.args[0].star:
            # ``t.view(torch.int16)`` reinterprets the bits as another dtype (bf16 export done
            # right); ``t.view(-1)`` or ``t.view(shape)`` keep the dtype.
            target = self._current.get(id(node.args[0].value))
            if target is not None and target.kind == DTYPE:
                return make(TENSOR, target.dtypes, self.origin(node)) if target.dtypes else make(TENSOR)
        if method == "type_as" and node.args:
            other = self._current.get(id(node.args[0].value))
            if other is not None and other.kind == TENSOR:
                return other.replace(role=None, autocast=None)
            return make(TENSOR)
        if method == "numpy":
            return receiver.replace(kind=NUMPY, role=None, autocast=None)
        if method in ("item", "tolist", "size", "dim", "numel", "data_ptr", "element_size", "stride", "backward"):
            return None
        if method in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
            dtypes, _, given = self._dtype_argument(node)
            return self._typed(TENSOR, node, None) if given else receiver.replace(role=None, autocast=None)
        dtypes, _, given = self._dtype_argument(node)
        if given and dtypes:
            data = self._semantics()
            if data is not None and (data.entry(f"Tensor.{method}") or {}).get("kw") == "dtype":
                return self._typed(TENSOR, node, None)
        return self._op_result(f"Tensor.{method}", node, frame, receiver=receiver)

    def _astype_dtypes(self, node: cst.Call) -> frozenset:
        arg = _arg(node, "dtype", 0)
        if arg is None:
            return frozenset()
        value = self._current.get(id(arg.value))
        if value is not None and value.kind in (DTYPE, NUMPY) and value.dtypes and value.kind == DTYPE:
            return value.dtypes
        if isinstance(arg.value, cst.Name) and arg.value.value in lib.PYTHON_TYPE_DTYPES:
            return frozenset({lib.PYTHON_TYPE_DTYPES[arg.value.value]})
        text = _string(arg.value)
        if text is not None and text in lib.DTYPE_WORDS:
            return frozenset({lib.DTYPE_WORDS[text]})
        for qualified in self.names.qualified_names(arg.value):
            word = lib.DTYPE_WORDS.get(qualified.rsplit(".", 1)[-1])
            if word is not None:
                return frozenset({word})
        return frozenset()

    def _numpy_method(self, method: str, receiver: Value, node: cst.Call) -> Value | None:
        if receiver.info == "rng":
            if method in ("integers", "choice", "permutation"):
                return make(NUMPY, (INT,), self.origin(node))
            if method in ("normal", "random", "uniform", "standard_normal", "rand", "randn", "beta", "gamma", "exponential"):
                return self._typed(NUMPY, node, FP64)
            if method == "randint":
                return make(NUMPY, (INT,), self.origin(node))
            return None
        if method == "astype":
            dtypes = self._astype_dtypes(node)
            return make(NUMPY, dtypes, self.origin(node)) if dtypes else make(NUMPY)
        if method in ("copy", "reshape", "transpose", "squeeze", "flatten", "ravel", "clip", "round", "T", "swapaxes", "repeat"):
            return receiver
        if method in ("mean", "std", "var", "sum"):
            return receiver
        return None


_CONSTANTS = {"True": True, "False": False, "None": None}


def _flag_of(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """(the flag, its truth when the test holds) for ``flag`` / ``not flag`` / ``args.fp16``."""
    truth = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, truth = test.expression, not truth
    key = dotted_name(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
    return (key, truth) if key else None


def _retyped(value: Value | None, dtypes, origins, partial: bool, keep_parts: bool = False) -> Value | None:
    """A module given a new dtype as a whole (a cast, its owner's dtype): its layers too. With
    ``keep_parts``, a layer with a low dtype of its own (``dtype=`` at construction) keeps it."""
    if value is None or value.kind != MODULE:
        return value
    if keep_parts and part_dtypes(value):
        return value.replace(partial=True) if not dtypes or partial else value
    items = value.items
    if items is not None:
        items = tuple(_retyped(item, dtypes, origins, partial, keep_parts) for item in items)
    return value.replace(dtypes=frozenset(dtypes), origins=tuple(origins), partial=partial, items=items)


def _concatenated(pieces: list, info: str | None) -> Value | None:
    """The sequence ``pieces`` make one after another: exact items when every piece's are
    known, parameters when every piece is parameters, else one ``element`` standing for any
    item (None: nothing known)."""
    if any(piece is None for piece in pieces):
        return None
    if pieces and all(piece.kind == PARAMS for piece in pieces):
        return _joined(pieces)
    if all(piece.kind == TUPLE and piece.items is not None and piece.info not in ITERATORS for piece in pieces):
        return make(TUPLE, items=tuple(item for piece in pieces for item in piece.items), info=info)
    elements = []
    for piece in pieces:
        if piece.kind == PARAMS:
            elements.append(make(TENSOR, piece.dtypes, None, role="param", target=piece.target)
                            .replace(partial=piece.partial, origins=piece.origins))
        elif piece.kind == TUPLE and piece.items is not None and piece.info not in ITERATORS:
            elements.extend(piece.items)
        elif piece.kind == TUPLE and piece.element is not None:
            elements.append(piece.element)
        else:
            return None
    return make(TUPLE, element=_joined(elements), info="list") if elements else None


def _stored(held: Value, index: cst.BaseExpression, value: Value | None) -> Value | None:
    """A dict or list after ``held[index] = value``."""
    if held.kind == MAPPING:
        key = _string(index)
        if key is not None and held.keys is not None:
            keys, items = list(held.keys), list(held.items)
            if key in keys:
                items[keys.index(key)] = value
            else:
                keys.append(key)
                items.append(value)
            return _mapping(keys, items)
        existing = list(held.items) if held.keys is not None else [held.element]
        return _mapping([None], [_joined([*existing, value])])
    if held.info in ITERATORS:
        return held
    if held.items is not None and isinstance(index, cst.Integer) and -len(held.items) <= int(index.value) < len(held.items):
        items = list(held.items)
        items[int(index.value)] = value
        return make(TUPLE, items=tuple(items), info=held.info)
    return _concatenated([held, make(TUPLE, items=(value,))], held.info)


def _params_held(value: Value | None, depth: int = 0) -> list[Value]:
    """The parameters a list or dict holds (``[{"params": model.parameters(), ...}, ...]``)."""
    if value is None or depth > 3:
        return []
    if value.kind == PARAMS:
        return [value]
    if value.kind not in (TUPLE, MAPPING):
        return []
    if value.kind == TUPLE and value.element is not None and value.element.kind == TENSOR and value.element.role == "param":
        param = value.element
        return [Value(kind=PARAMS, dtypes=param.dtypes, partial=param.partial, origins=param.origins, target=param.target)]
    found = []
    for held in (value.items if value.items is not None else (value.element,)):
        found.extend(_params_held(held, depth + 1))
    return found


def _mapping(keys: list, values: list) -> Value:
    """A dict: keyed when every key is a known string, else one joined ``element``."""
    element = _joined(values) if values else None
    if all(key is not None for key in keys):
        return make(MAPPING, element=element, items=tuple(values), keys=tuple(keys))
    return make(MAPPING, element=element)


def _slice_bounds(part: cst.Slice) -> tuple | None:
    """(lower, upper) of a ``[a:b]`` slice whose bounds are integer literals or absent; None for
    any other (a step, a bound the analysis cannot read)."""
    if part.step is not None:
        return None
    bounds = []
    for bound in (part.lower, part.upper):
        if bound is None:
            bounds.append(None)
        elif isinstance(bound, cst.Integer):
            bounds.append(int(bound.value))
        elif isinstance(bound, cst.UnaryOperation) and isinstance(bound.operator, cst.Minus) \
                and isinstance(bound.expression, cst.Integer):
            bounds.append(-int(bound.expression.value))
        else:
            return None
    return tuple(bounds)


def _keyed(mapping: Value, key: str | None) -> Value | None:
    """``d["k"]`` / ``d.get("k")``: the value stored under a known key, else any of them."""
    if key is not None and mapping.keys is not None:
        return mapping.items[mapping.keys.index(key)] if key in mapping.keys else None
    return mapping.element


def _joined(values) -> Value | None:
    """The value of any one of ``values`` (None among them: partial)."""
    result = None
    for index, value in enumerate(values):
        result = value if index == 0 else join(result, value)
    return result


class _Nothing:
    def __repr__(self) -> str:
        return "NOTHING"


NOTHING = _Nothing()

def _is_static(function: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in function.decorators)


def _world_module(value: Value | None) -> bool:
    """A module whose dtype is a precision world's (seeded by the project pass)."""
    return value is not None and value.kind == MODULE and isinstance(value.origin, WorldOrigin)


def _whole_low(owner: Value | None) -> bool:
    """The module a method runs on was cast to low precision as a whole (not one of its parts)."""
    return owner is not None and owner.kind == MODULE and bool(owner.dtypes & LOW) and not part_dtypes(owner)


def _low_parts(value: Value | None) -> tuple:
    """(dtype, Origin) of the low dtypes a submodule (or a parameter) holds, its own and its parts'."""
    if value is None or not (value.kind == MODULE or value.kind == TENSOR and value.role == "param"):
        return ()
    own = tuple((d, o) for d, o in value.origins if d in LOW)
    return merge_parts(own, value.parts)


def _modules_in(value: Value | None) -> list[Value]:
    """The modules a container's argument holds (a module, a list of them, a comprehension)."""
    if value is None:
        return []
    if value.kind == MODULE:
        return [value]
    if value.kind in (TUPLE, MAPPING):
        held = [v for v in (value.items or ()) if v is not None]
        if value.element is not None:
            held.append(value.element)
        return [v for v in held if v.kind == MODULE]
    return []


def _chained_module_key(expr: cst.BaseExpression) -> str | None:
    """``model`` for ``model.half()`` / ``model.cuda().half()``: module casts and moves work in
    place and return the module, so ``model.half().float()`` leaves ``model`` in float32."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and (
        expr.func.attr.value in lib.MODULE_SELF_METHODS or expr.func.attr.value in lib.CAST_METHODS
        or expr.func.attr.value in ("to", "type")
    ):
        expr = expr.func.value
    return dotted_name(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None


# What ``vae.encode(x)`` gives (a TUPLE's ``info``): its latent distribution and samples are in
# the autoencoder's dtype.
AUTOENCODER_OUTPUT = "autoencoder_output"
AUTOENCODER_FIELDS = frozenset({"latent_dist", "latents", "sample"})
# What an image processor's call gives (a BATCH's ``info``): only its ``pixel_values`` are known,
# float32 (library.image_processor_call).
IMAGE_BATCH = "image_processor"

# Python's own types as torch dtypes (``t.to(int)`` is int64, ``t.to(float)`` float64).
_PYTHON_TYPES = {"int": INT, "float": FP64, "bool": BOOL}


# TUPLE values that stand for an iterator (their ``element`` is one step), not a sequence of items.
ITERATORS = frozenset({"enumerate", "zip", "items", "values", "modules", loaders.LOADER})

# Tensor methods whose results are pieces of the tensor (``values, indices = x.sort()`` is not).
SPLITTING_METHODS = frozenset({"chunk", "split", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit"})


def _splits(source) -> bool:
    """``x.chunk(3)`` / ``x.unbind(0)``, and a tensor method's result unpacked along its first
    dimension (``q, k, v = qkv.view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)``): pieces of one tensor.
    (A module's result may be a tuple the flow holds as its first tensor: not these.)"""
    return isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) \
        and (source.func.attr.value in SPLITTING_METHODS or source.func.attr.value in RESHAPING_METHODS) \
        and dotted_name(source.func.value) != "torch"


# Tensor methods that only rearrange a tensor: unpacking their result iterates its first dimension.
RESHAPING_METHODS = frozenset("view reshape permute transpose flatten unflatten movedim contiguous".split())


def _looks_like_module(expr: cst.BaseExpression) -> bool:
    """``Net()``, ``build_model(cfg)``, ``self.unet``, ``model.cuda()``: an unknown receiver
    spelled like a model (device moves and mode switches return the module)."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value in lib.MODULE_SELF_METHODS and isinstance(expr.func.value, (cst.Name, cst.Attribute)):
        expr = expr.func.value
    if isinstance(expr, cst.Call):
        name = dotted_name(expr.func) or ""
        last = name.rsplit(".", 1)[-1]
        return last[:1].isupper() or bool(lib.MODEL_NAME.search(last))
    name = dotted_name(expr) or ""
    return bool(lib.MODEL_NAME.search(name.rsplit(".", 1)[-1]))


def _for_clauses(node):
    clause = node.for_in
    while clause is not None:
        yield clause
        clause = clause.inner_for_in

"""How a precision world enters the per-file dtype flow.

When the flow runs a method of a module class that the project pass found cast to low precision
elsewhere (``ctx.worlds``), ``self`` is that low-precision module and the method's tensor
parameters are low-precision tensors, as they are when the cast model runs: a half model's
layers produce and pass half tensors. The values' origin names the cast (file, line, text).
A callback world (``generate(logits_processor=[proc])``) only makes the tensor parameters of the
methods it names low precision; ``self`` keeps its own values. A helper that callers in other
files give a cast-built instance (``FileWorlds.parameters``) gets that module for the parameter.
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import re

import libcst as cst

from dtype_lint.facts.flow.values import (
    DTYPE, LONG_NAMES, MODULE, TENSOR, TUPLE, Origin, Value, describe_dtypes, join, make,
)

# Parameters that hold integers, booleans or sizes, not activations (by name or annotation).
NOT_ACTIVATIONS = re.compile(
    r"(^|_)(ids?|idx|index|indices|labels?|targets?|positions?|pos|lengths?|lens|size|sizes|"
    r"shape|dim|dims|height|width|num|n|step|steps|timesteps?|k|training|train|deterministic|return|use|is|has|"
    r"output|verbose|kwargs|args)($|_)"
)
NOT_TENSOR_ANNOTATIONS = frozenset({"int", "bool", "str", "float", "list", "tuple", "dict", "Optional[int]",
                                    "Optional[bool]"})


@dataclasses.dataclass(frozen=True)
class ClassWorld:
    """The world a class's methods are checked under: its dtype and how to say it."""

    dtype: str
    certain: bool  # every world of the class is this low dtype, unconditionally
    description: str  # "float16 when `args.fp16` is true (train.py:11, `layer.half()`)"
    cast: str  # "train.py:11"
    trains: bool = False  # a framework trains the parameters in this dtype (optimizer rules apply)
    # a callback world (``generate(logits_processor=[proc])``): only these methods get the dtype's
    # tensors, and ``self`` keeps its own values
    methods: tuple = ()


@dataclasses.dataclass(frozen=True)
class AutocastWorld:
    """The autocast region a class's methods (or a function) are checked under."""

    dtype: str  # fp16 / bf16
    device: str | None
    certain: bool  # every region is this dtype, enabled on every run
    description: str  # "float16 autocast when `use_amp` is true (train.py:11, `torch.autocast(...)`)"
    entries: tuple[str, ...] = ()  # the methods that run under it (empty: every method but __init__)
    activations: bool = False  # a submodule: its tensor parameters are autocast outputs

    def runs(self, method: str) -> bool:
        return method != "__init__" and (not self.entries or method in self.entries)

    def info(self):
        """The region as the dtype flow holds one (an ``AutocastInfo`` with no node here)."""
        from dtype_lint.facts.amp import AutocastInfo
        from dtype_lint.facts.flow.values import LONG_NAMES

        return AutocastInfo(device=self.device, dtype=LONG_NAMES[self.dtype], enabled=True if self.certain else None)


@dataclasses.dataclass(frozen=True)
class ReturnedWorld:
    """A call whose project function returns a low-precision model (see worlds.Returned)."""

    dtype: str
    certain: bool
    position: int  # -1: the whole value; else the item of a tuple of ``length``
    length: int
    description: str  # "`load_model()` returns a model in float16 when ..."
    cast: str
    partial: bool = False  # only a submodule is cast (``self.model.half()`` in ``__init__``)


# How a value's origin names the project function that returned it (messages say it; the project
# pass keeps a new finding whose message does).
RETURNED_BY = "returned by "


@dataclasses.dataclass(frozen=True)
class ReturnedResult:
    """What a project function in another file returns (a result of project/results.py, as JSON)."""

    function: str  # "random_camera", "ModelLoader.load_inputs"
    where: str  # its file, as the checked file sees it ("dataset.py")
    result: str
    caller: str = ""  # a constructor argument's call ("train.py:7"); "" for a call of this file


@dataclasses.dataclass(frozen=True)
class PartWorld:
    """A submodule (an attribute of a class) the project gives a dtype of its own, apart from the
    rest of the class: ``model.backbone.half()``, ``self.wte.to(torch.bfloat16)`` in a method
    the program calls, ``nn.PReLU(depth, dtype=torch.float16)`` in ``__init__``."""

    dtype: str
    certain: bool  # unconditional, and the only dtype the project gives it
    description: str  # "float16 when `args.fp16` is true (infer.py:9, `model.backbone.half()`)"
    origin: str  # "infer.py:9 (`model.backbone.half()`)": where the dtype comes from, in values' "since"


@dataclasses.dataclass(frozen=True)
class CallContext:
    """One way a project function is called from another file: the dtypes its parameters get
    there and the autocast region the call runs in (see contexts.py)."""

    # ((parameter, dtypes, partial, 8-bit integer name or "", "tensor" or "dtype"), ...), in the
    # callee's parameter order: a tensor of those dtypes, or a torch.dtype (``dtype=torch.float16``)
    args: tuple
    autocast: str | None  # "fp16" / "bf16": the caller's autocast region
    autocast_conditional: bool  # the region's ``enabled=`` is a run-time value
    path: str  # the call site
    line: int
    via: str = ""  # for a chain: "`ssim` from evaluate.py:12", the call that passed the values on

    @property
    def certain(self) -> bool:
        """Every dtype is one dtype on every path of the caller, and the autocast unconditional."""
        return all(len(dtypes) == 1 and not partial for _, dtypes, partial, *_ in self.args) \
            and not (self.autocast and self.autocast_conditional)

    def where(self, base: str = "") -> str:
        return f"{relative(self.path, base)}:{self.line}"

    def describe(self, function: str, base: str = "") -> str:
        """``calls `ssim` with float16 `img1` from evaluate.py:12``-style words, as a sentence."""
        given = [f"{describe_dtypes(dtypes, integer)} `{name}`" if kind == "tensor" else
                 f"`{name}` {' or '.join('torch.' + LONG_NAMES[d] for d in sorted(dtypes))}"
                 for name, dtypes, _, integer, kind in self.args if set(dtypes) & RISKY or integer]
        words = f"`{function}` is called with {', '.join(given[:3])}" if given else f"`{function}` is called"
        if self.autocast:
            state = "under float16 autocast" if self.autocast == "fp16" else "under bfloat16 autocast"
            words += f" {state}{' (when enabled)' if self.autocast_conditional else ''}"
        via = f", via {self.via}" if self.via else ""
        return f"{words} from {self.where(base)}{via}"


RISKY = frozenset({"fp16", "bf16", "fp64"})


@dataclasses.dataclass(frozen=True)
class FileWorlds:
    """What the project pass tells one file: its classes' worlds, its calls' returned models."""

    classes: dict  # class name -> ClassWorld
    returned: dict  # called dotted name -> ReturnedWorld
    # class name -> constructor keyword -> ClassWorld: the low dtype callers construct it with
    arguments: dict = dataclasses.field(default_factory=dict)
    # the project's low-precision checkpoints, for this file's ``torch.load`` calls (checkpoint_loads.py)
    checkpoints: object = None
    # called dotted name -> helpers of other files that cast the module they are given (helpers.py)
    helpers: dict = dataclasses.field(default_factory=dict)
    # function name -> parameter -> ReturnedWorld: a cast-built instance callers elsewhere pass it
    parameters: dict = dataclasses.field(default_factory=dict)
    # "data:training.mixed_precision" / "py:cfg.fp16" -> [[value, "config.toml:2"], ...]: the
    # config settings the file may read (dtype_lint/facts/config_values.py)
    config: dict = dataclasses.field(default_factory=dict)
    # called dotted name -> (ReturnedResult, ...): what the project functions it names return
    values: dict = dataclasses.field(default_factory=dict)
    # class name -> constructor keyword -> (ReturnedResult, ...): results callers construct it with
    argument_values: dict = dataclasses.field(default_factory=dict)
    # class name -> attribute -> PartWorld: the submodules cast apart from the rest of the class
    parts: dict = dataclasses.field(default_factory=dict)
    # called dotted name -> PartWorld: a project class (of another file) whose own submodules
    # keep a low dtype, so the model it builds mixes dtypes (``BasicBlockIR(64, 64)``)
    built: dict = dataclasses.field(default_factory=dict)
    # function name -> ClassWorld: a function the program binds as the forward of a model's
    # modules (``module.forward = fn.__get__(module)``), so ``self`` is a module of that world
    functions: dict = dataclasses.field(default_factory=dict)
    # function (``ssim``, ``Processor.forward``) -> the CallContext its body is checked under
    contexts: dict = dataclasses.field(default_factory=dict)
    autocast: dict = dataclasses.field(default_factory=dict)  # class name -> AutocastWorld
    # function name -> AutocastWorld: a free function a method under an autocast world calls
    autocast_functions: dict = dataclasses.field(default_factory=dict)
    # class names the file imports from other files of the project whose instances hold a
    # torch.nn layer with weights (facts/diffusers_models.py)
    weighted: frozenset = frozenset()

    def key(self) -> list:
        return [self.checkpoints.key() if self.checkpoints is not None else None,
                sorted((n, [dataclasses.astuple(h) for h in items]) for n, items in self.helpers.items()),
                sorted((n, dataclasses.astuple(w)) for n, w in self.classes.items()),
                sorted((n, dataclasses.astuple(w)) for n, w in self.autocast.items()),
                sorted((n, dataclasses.astuple(w)) for n, w in self.autocast_functions.items()),
                sorted((n, dataclasses.astuple(w)) for n, w in self.returned.items()),
                sorted((n, sorted((k, dataclasses.astuple(w)) for k, w in by_kw.items()))
                       for n, by_kw in self.arguments.items()),
                sorted((n, sorted((k, dataclasses.astuple(w)) for k, w in by.items()))
                       for n, by in self.parameters.items()),
                sorted(self.config.items()),
                sorted((n, [dataclasses.astuple(r) for r in rs]) for n, rs in self.values.items()),
                sorted((n, sorted((k, [dataclasses.astuple(r) for r in rs]) for k, rs in by_kw.items()))
                       for n, by_kw in self.argument_values.items()),
                sorted((n, sorted((a, dataclasses.astuple(w)) for a, w in by_attr.items()))
                       for n, by_attr in self.parts.items()),
                sorted((n, dataclasses.astuple(w)) for n, w in self.built.items()),
                sorted((n, dataclasses.astuple(w)) for n, w in self.functions.items()),
                sorted((n, dataclasses.astuple(c)) for n, c in self.contexts.items()),
                sorted(self.weighted)]


def result_value(results: tuple, node: cst.CSTNode, origin_for, argument=None) -> Value | None:
    """The value of a call to project functions that return ``results`` (joined when several).
    ``argument(name, position)``: the caller's value for a parameter, and whether it is given."""
    value = None
    for index, returned in enumerate(results):
        one = _result(returned, node, origin_for, argument)
        value = one if index == 0 else join(value, one)
    return value


def _result(returned: ReturnedResult, node, origin_for, argument) -> Value | None:
    result = json.loads(returned.result)
    if "value" in result:
        return _leaf(result["value"], returned, node, origin_for, argument)
    if "element" in result:
        element = _leaf(result["element"], returned, node, origin_for, argument)
        return make(TUPLE, element=element, info="comprehension") if element is not None else None
    items = tuple(_leaf(item, returned, node, origin_for, argument) if item else None for item in result["items"])
    return make(TUPLE, items=items)


def _leaf(leaf: dict, returned: ReturnedResult, node, origin_for, argument) -> Value | None:
    if leaf["follows"] and argument is not None:
        given, value = argument(leaf["follows"], leaf["position"])
        if given:
            # the caller's dtype decides: ``load_inputs(dtype_override=torch.bfloat16)``
            if value is None or value.kind != DTYPE or not value.dtypes:
                return make(leaf["kind"])
            return Value(kind=leaf["kind"], dtypes=value.dtypes, partial=value.partial, origins=value.origins)
    if not leaf["dtypes"]:
        return make(leaf["kind"])
    name = returned.function.rsplit(".", 1)[-1]
    by = f"`{name}()`" + (f" at {returned.caller}" if returned.caller else "")
    where = f"{returned.where}:{leaf['line']}" if leaf["line"] else returned.where
    words = f"{where} (`{leaf['text']}`), {RETURNED_BY}{by}"
    origin = ReturnedOrigin(node, origin_for(node)._resolve, words, leaf["numpy"])
    return make(leaf["kind"], leaf["dtypes"], origin).replace(partial=leaf["partial"])


def context_value(parameter: tuple, node: cst.CSTNode, origin_for, words: str):
    """A parameter's value under a CallContext: the tensor the caller passes."""
    _, dtypes, partial, integer, kind = parameter
    base = origin_for(node)
    value = make(DTYPE if kind == "dtype" else TENSOR, dtypes, ContextOrigin(node, base._resolve, words, integer))
    return value.replace(partial=True) if partial else value


def argument_value(world: ClassWorld, node: cst.CSTNode, origin_for):
    """The dtype a constructor keyword is given by a caller of the project (a DTYPE value)."""
    base = origin_for(node)
    return make(DTYPE, (world.dtype,), WorldOrigin(node, base._resolve, f"the call at {world.cast}"))


def returned_value(world: ReturnedWorld, node: cst.CSTNode, origin_for):
    """The value of a call to a function that returns a model cast to ``world.dtype``."""
    base = origin_for(node)
    origin = WorldOrigin(node, base._resolve, f"the cast at {world.cast}")
    # the world where the cast happens; a conditional one caps the findings' confidence instead
    module = make(MODULE, (world.dtype,), origin)
    if world.position < 0:
        return module
    items = tuple(module if index == world.position else None for index in range(world.length))
    return make(TUPLE, items=items)


class WorldOrigin(Origin):
    """An origin in another file (or another function): described by the world, not a line here."""

    __slots__ = ("_words",)

    def __init__(self, node: cst.CSTNode, resolve, words: str) -> None:
        super().__init__(node, resolve)
        self._words = words

    def describe(self) -> str:
        return self._words


class ReturnedOrigin(WorldOrigin):
    """The origin of a value a project function in another file returns; ``numpy``: its dtype
    came from a NumPy array there (``torch.from_numpy(np.stack(...))``)."""

    __slots__ = ("numpy",)

    def __init__(self, node: cst.CSTNode, resolve, words: str, numpy: bool) -> None:
        super().__init__(node, resolve, words)
        self.numpy = numpy


class PartWorldOrigin(WorldOrigin):
    """The world of one submodule (see ``PartWorld``): a part's dtype, set elsewhere."""

    __slots__ = ()
    part = True


def part_value(world: PartWorld, value, node: cst.CSTNode, origin_for):
    """A submodule as its part world makes it: its own dtype, from the cast the world names."""
    base = origin_for(node)
    origin = PartWorldOrigin(node, base._resolve, world.origin)
    return value.replace(dtypes=frozenset({world.dtype}), origins=((world.dtype, origin),), partial=False)


def built_value(world: PartWorld, node: cst.CSTNode, origin_for, info: str):
    """A float32 model built by a project class whose submodules keep a low dtype (``parts``)."""
    base = origin_for(node)
    origin = PartWorldOrigin(node, base._resolve, world.origin)
    return make(MODULE, ("fp32",), base, info=info).replace(parts=((world.dtype, origin),))


class ContextOrigin(WorldOrigin):
    """A value a caller in another file passes; ``integer`` names an 8-bit integer dtype
    (``uint8``), which the lattice's one integer category does not hold."""

    __slots__ = ("integer",)

    def __init__(self, node: cst.CSTNode, resolve, words: str, integer: str = "") -> None:
        super().__init__(node, resolve, words)
        self.integer = integer

    def _get(self) -> tuple[int, str]:
        line = super()._get()[0]
        return line, f"torch.{self.integer}" if self.integer else self._words


def activation(world: AutocastWorld, node: cst.CSTNode, origin_for):
    """A tensor parameter of a submodule under autocast: what the model's layers made, maybe the
    autocast dtype (partial: a layer norm's or the caller's float32 reaches it too)."""
    base = origin_for(node)
    origin = WorldOrigin(node, base._resolve, "the autocast region of the model that contains it")
    return make(TENSOR, (world.dtype,), origin).replace(partial=True)


def world_values(world: ClassWorld, node: cst.CSTNode, origin_for, class_name: str):
    """(``self``, a tensor parameter) as the world makes them."""
    base = origin_for(node)
    origin = WorldOrigin(node, base._resolve, f"the cast at {world.cast}")
    module = make(MODULE, (world.dtype,), origin, info=class_name)
    tensor = make(TENSOR, (world.dtype,), origin)
    return module, tensor


def world_tensor_parameter(param: cst.Param) -> bool:
    """Whether a parameter of a method likely carries an activation (so the world's dtype)."""
    if param.default is not None and not (isinstance(param.default, cst.Name) and param.default.value == "None"):
        return False
    if param.annotation is not None:
        annotation = param.annotation.annotation
        spelled = annotation.value if isinstance(annotation, cst.Name) else None
        if spelled in NOT_TENSOR_ANNOTATIONS:
            return False
    return not NOT_ACTIVATIONS.search(param.name.value.lower())


def relative(path: str, base: str = "") -> str:
    """``path`` relative to the directory ``base`` when inside it, else as given."""
    if base:
        inside = posixpath.relpath(path, base)
        return inside if not inside.startswith("..") else path
    return path

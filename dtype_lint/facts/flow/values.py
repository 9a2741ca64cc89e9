"""The dtype lattice and the abstract values the flow analysis assigns to expressions.

A dtype is one of ``fp32 fp16 bf16 fp64 int bool``; a value holds the set of dtypes it may have
(empty: unknown) and whether some path left it unknown (``partial``). Values are immutable and
compare by content, so environments can be compared to find a loop's fixed point.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import libcst as cst

FP32, FP16, BF16, FP64, INT, BOOL = "fp32", "fp16", "bf16", "fp64", "int", "bool"
DTYPES = (FP32, FP16, BF16, FP64, INT, BOOL)
LOW = frozenset({FP16, BF16})
FLOATS = frozenset({FP32, FP16, BF16, FP64})
# How messages spell them (torch's own names).
LONG_NAMES = {FP32: "float32", FP16: "float16", BF16: "bfloat16", FP64: "float64", INT: "int64", BOOL: "bool"}
SHORT_NAMES = {long: short for short, long in LONG_NAMES.items()}
# How code spells a narrower integer dtype: ``.byte()``, ``torch.int32``.
_INTEGER_SPELLINGS = re.compile(r"\.(byte|char|short|int|long)\(\)|\b(u?int(?:8|16|32|64))\b")
_INTEGER_METHODS = {"byte": "uint8", "char": "int8", "short": "int16", "int": "int32", "long": "int64"}

# Kinds of value.
MODULE, TENSOR, SCALER, OPTIMIZER, NUMPY, DTYPE, AUTOCAST = (
    "module", "tensor", "scaler", "optimizer", "numpy", "dtype", "autocast",
)
BATCH = "batch"  # a tokenizer/processor output: a mapping of tensors (``inputs["input_ids"]``)
PARAMS = "params"  # ``model.parameters()`` and filtered lists of it
TOKENIZER = "tokenizer"
TUPLE = "tuple"  # a tuple whose items are known (``model, opt = accelerator.prepare(model, opt)``)
MAPPING = "mapping"  # a dict literal: ``{"fp16": torch.float16, ...}[args.precision]``
CLASS = "class"  # a user-defined class (calling it makes an instance)
MAYBE_AUTOCAST = "maybe"  # a module's forward may run under autocast: its precision is set elsewhere
INSTANCE = "instance"  # an instance of a user-defined class that is not an nn.Module
CONST = "const"  # ``True`` / ``False`` / ``None`` (``info``): a flag whose value the program writes
IMAGE = "image"  # a PIL image; its dtypes are those of its pixels as a NumPy array (mode "RGB": uint8)
UNKNOWN = "unknown"


class Origin:
    """Where a dtype came from: a node of the file, its line and short source text (lazy)."""

    __slots__ = ("node", "_resolve", "_cache")
    numpy = False  # a dtype that came from a NumPy array in another file (facts/flow/seeding.py)
    # A dtype set on one part of a model (``model.backbone.half()``, a layer built with
    # ``dtype=torch.float16`` inside a float32 model): it meets the rest inside ``forward``.
    part = False

    def __init__(self, node: "cst.CSTNode", resolve) -> None:
        self.node = node
        self._resolve = resolve  # node -> (line, text); positions are computed only if asked
        self._cache: tuple[int, str] | None = None

    def _get(self) -> tuple[int, str]:
        if self._cache is None:
            self._cache = self._resolve(self.node)
        return self._cache

    @property
    def line(self) -> int:
        return self._get()[0]

    @property
    def text(self) -> str:
        return self._get()[1]

    def describe(self) -> str:
        """``line 12 (`model.half()`)``."""
        return f"line {self.line} (`{self.text}`)"

    def __repr__(self) -> str:
        return f"Origin({type(self.node).__name__})"


class PartOrigin(Origin):
    """The origin of a dtype given to a submodule, not to the whole model (see ``Origin.part``)."""

    __slots__ = ()
    part = True


class EntryOrigin(Origin):
    """A NumPy origin seen through the conversion that made its array a tensor: it describes (and
    has the node of) the NumPy source, and ``entry`` is the conversion (``torch.from_numpy(a)``,
    ``torch.tensor(a)``), where rules report: the line a fix changes."""

    __slots__ = ("entry", "source")

    def __init__(self, source: Origin, entry: "cst.CSTNode") -> None:
        super().__init__(source.node, source._resolve)
        self.entry = entry
        self.source = source

    @property
    def numpy(self) -> bool:  # type: ignore[override]
        return self.source.numpy

    def describe(self) -> str:
        return self.source.describe()


def part_dtypes(value: "Value") -> frozenset:
    """The low dtypes of ``value`` that come from a part of a model (``PartOrigin``)."""
    return frozenset(d for d, origin in value.origins if d in LOW and origin.part)


@dataclasses.dataclass(frozen=True)
class Value:
    """What the analysis knows about an expression at the point it is evaluated.

    ``dtypes``: the dtypes it may have (empty: unknown). ``partial``: some path reaching here
    left it unknown, so ``dtypes`` is a lower bound. ``origins``: (dtype, Origin) pairs in program
    order, one per dtype. ``role``: "param" / "grad" for parameters and their gradients, "peft"
    for a model wrapped with adapters. ``target``: the dotted name of the module an optimizer or a
    params list belongs to. ``info``: kind-specific detail (AutocastInfo, the class name of a
    module, an OptimizerInfo, the enabled flag of a scaler). ``items``: tuple members;
    ``element``: what indexing a mapping/batch gives. ``autocast``: the effective dtype of the
    autocast region that produced this tensor (None when produced outside autocast); on a module,
    the region a framework runs its forward in (``accelerator.prepare`` under mixed precision;
    ``MAYBE_AUTOCAST`` when the framework's precision is not known here, so neither is the region).
    ``parts``: on a module, (dtype, Origin) pairs of the low dtypes some of its submodules keep
    beyond ``dtypes`` (an ``nn.PReLU(..., dtype=torch.float16)`` inside a float32 block); a
    whole-model cast drops them. ``keys``: on a mapping whose keys are known strings (a dict
    literal, ``dict(a=x)``, a function's ``**kwargs``), the key of each of ``items``. On a torch.nn
    container (``nn.Sequential``, ``nn.ModuleList``), ``items`` are its layers in order.
    """

    kind: str = UNKNOWN
    dtypes: frozenset = frozenset()
    partial: bool = False
    origins: tuple = ()
    role: str | None = None
    target: str | None = None
    info: Any = None
    items: tuple | None = None
    element: "Value | None" = None
    autocast: str | None = None
    parts: tuple = ()
    keys: tuple | None = None

    # -- questions rules ask --------------------------------------------------------------------
    @property
    def certain(self) -> bool:
        """The same single dtype on every path."""
        return len(self.dtypes) == 1 and not self.partial

    @property
    def dtype(self) -> str | None:
        """The dtype when certain, else None."""
        return next(iter(self.dtypes)) if self.certain else None

    @property
    def known(self) -> bool:
        return bool(self.dtypes)

    def may_be(self, *dtypes: str) -> bool:
        return any(d in self.dtypes for d in dtypes)

    def only(self, *dtypes: str) -> bool:
        """Every known path gives one of ``dtypes`` (and no path is unknown)."""
        return bool(self.dtypes) and not self.partial and self.dtypes <= frozenset(dtypes)

    @property
    def low_precision(self) -> bool:
        return self.may_be(FP16, BF16)

    @property
    def origin(self) -> Origin | None:
        """The origin of the first dtype by program order (see ``origin_of`` for a given one)."""
        return self.origins[0][1] if self.origins else None

    def origin_of(self, dtype: str) -> Origin | None:
        for candidate, origin in self.origins:
            if candidate == dtype:
                return origin
        return None

    def describe(self) -> str:
        """``float16`` / ``float16 or float32`` / ``unknown``, in a fixed order."""
        if not self.dtypes:
            return "of unknown dtype"
        names = [LONG_NAMES[d] if d != INT else self._integer_name() for d in DTYPES if d in self.dtypes]
        return " or ".join(names)

    def _integer_name(self) -> str:
        """The lattice has one integer dtype; name the one its origin wrote (``.byte()`` is uint8)."""
        origin = self.origin_of(INT)
        found = _INTEGER_SPELLINGS.findall(origin.text) if origin is not None else []
        if not found:
            return LONG_NAMES[INT]
        method, literal = found[-1]
        return _INTEGER_METHODS.get(method, LONG_NAMES[INT]) if method else literal

    def since(self, dtype: str | None = None) -> str:
        """``since line 12 (`model.half()`)`` for ``dtype`` (default: the first origin)."""
        origin = self.origin_of(dtype) if dtype else self.origin
        return f"since {origin.describe()}" if origin is not None else ""

    # -- building -------------------------------------------------------------------------------
    def with_dtypes(self, dtypes, origin: Origin | None, *, partial: bool = False, **changes) -> "Value":
        dtypes = frozenset(dtypes)
        origins = tuple((d, origin) for d in DTYPES if d in dtypes) if origin is not None else ()
        return dataclasses.replace(self, dtypes=dtypes, partial=partial, origins=origins, **changes)

    def replace(self, **changes) -> "Value":
        return dataclasses.replace(self, **changes)


def make(kind: str, dtypes=(), origin: Origin | None = None, **fields) -> Value:
    dtypes = frozenset(dtypes)
    origins = tuple((d, origin) for d in DTYPES if d in dtypes) if origin is not None else ()
    return Value(kind=kind, dtypes=dtypes, origins=origins, **fields)


def join(a: Value | None, b: Value | None) -> Value | None:
    """The value on either of two paths. None (nothing known) on one side makes it partial."""
    if a is None and b is None:
        return None
    if a is None or b is None:
        known = a if a is not None else b
        return known if known.partial or not known.dtypes else dataclasses.replace(known, partial=True)
    if a == b:
        return a
    if a.kind == b.kind == "tuple" and (_empty(a) or _empty(b)):
        return b if _empty(a) else a  # a list that may still be empty adds no item of its own
    kind = a.kind if a.kind == b.kind else (b.kind if a.kind == UNKNOWN else a.kind if b.kind == UNKNOWN else UNKNOWN)
    dtypes = a.dtypes | b.dtypes
    partial = a.partial or b.partial or not a.dtypes or not b.dtypes
    seen = {d for d, _ in a.origins}
    origins = a.origins + tuple((d, o) for d, o in b.origins if d not in seen)
    items = None
    if a.items is not None and b.items is not None and len(a.items) == len(b.items) and a.keys == b.keys:
        items = tuple(join(x, y) for x, y in zip(a.items, b.items))
    return Value(
        kind=kind,
        dtypes=dtypes,
        partial=partial,
        origins=origins,
        role=a.role if a.role == b.role else None,
        target=a.target if a.target == b.target else None,
        info=a.info if a.info == b.info else None,
        items=items,
        element=join(a.element, b.element) if (a.element is not None or b.element is not None) else None,
        autocast=a.autocast if a.autocast == b.autocast else None,
        parts=merge_parts(a.parts, b.parts),
        keys=a.keys if items is not None else None,
    )


def _empty(value: Value) -> bool:
    return value.items == () and value.element is None


def merge_parts(*groups) -> tuple:
    """(dtype, Origin) pairs of several ``Value.parts``, the first origin of each dtype."""
    found: dict[str, object] = {}
    for group in groups:
        for dtype, origin in group:
            found.setdefault(dtype, origin)
    return tuple((d, found[d]) for d in DTYPES if d in found)


def promote_pair(x: str, y: str) -> str:
    """torch's type promotion between two tensors' categories."""
    if x == y:
        return x
    if FP64 in (x, y):
        return FP64
    if FP32 in (x, y):
        return FP32
    if {x, y} == {FP16, BF16}:
        return FP32
    if x in LOW:
        return x
    if y in LOW:
        return y
    return INT  # int with bool


def promote(a: Value, b: Value) -> tuple[frozenset, bool]:
    """The dtypes of ``a <op> b`` for two tensor values, and whether it is partial."""
    dtypes = frozenset(promote_pair(x, y) for x in a.dtypes for y in b.dtypes)
    return dtypes, a.partial or b.partial


def describe_dtypes(dtypes, integer: str | None = None) -> str:
    """``float16`` / ``bfloat16 or float16`` / ``uint8``."""
    if integer:
        return integer
    return " or ".join(LONG_NAMES.get(d, d) for d in sorted(dtypes))

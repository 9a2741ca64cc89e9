"""What torch's API does to dtypes, read from data generated from torch itself.

``tools/gen_torch_semantics.py`` asks a torch build (its op database, its module database,
its type-promotion rules, its autocast lists, small CPU runs) and writes
``dtype_lint/data/torch_semantics_<major>.<minor>.json``; this module reads that file, lazily,
the first time a question is asked, and never imports torch. docs/torch-semantics.md describes
the file and how to regenerate it.

Names are the public spellings after import resolution: ``torch.exp``, ``torch.nn.functional.softmax``,
``torch.linalg.svd``, ``torch.nn.Linear``, and ``Tensor.sum`` for methods (``torch.Tensor.sum``
is accepted too). Dtypes are the flow's names (``fp32 fp16 bf16 fp64 int bool``, see
``dtype_lint.facts.flow.values``); an output outside them keeps torch's name (``complex64``,
``int32``). An operand is a tensor's dtype, ``None`` when the analysis does not know it, or a
Python scalar (``SCALAR_FLOAT``, ``SCALAR_INT``, ``SCALAR_BOOL``). Every question answers None
when the data does not know: a caller never turns that into float32.

Which file: ``target-torch`` (``Settings.target_torch``) picks the generated version equal to
it or, failing that, the nearest lower one; a target older than every file gets the oldest file,
and no target the newest.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
_FILE = re.compile(r"^torch_semantics_(\d+)\.(\d+)\.json$")

FLOATS = ("fp32", "fp16", "bf16", "fp64")
SCALAR_FLOAT, SCALAR_INT, SCALAR_BOOL = "py:float", "py:int", "py:bool"
_SCALAR_KIND = {SCALAR_FLOAT: "float", SCALAR_INT: "int", SCALAR_BOOL: "bool"}
# Catalogue kinds that say what a name does to dtypes (``tensor``/``unknown``: a tensor or an
# object whose dtype rule the generator could not derive).
_DESCRIBED_KINDS = ("namespace", "class", "nontensor", "value")


@dataclasses.dataclass(frozen=True)
class RangeFact:
    """How an op fails in a low dtype on values the generator tried: ``overflow`` (inf where
    float32 is finite) or ``precision`` (error above 1 % for float16, 5 % for bfloat16), first seen
    with inputs scaled to ``|x| <= scale`` (``long``: a 4096-element reduction); ``autocast``:
    CUDA autocast runs the op in float32."""

    dtype: str
    how: str | None
    scale: float | str | None
    autocast: bool


def available() -> list[tuple[tuple[int, int], Path]]:
    """The generated files, oldest first."""
    found = []
    for path in DATA_DIR.glob("torch_semantics_*.json"):
        match = _FILE.match(path.name)
        if match:
            found.append(((int(match.group(1)), int(match.group(2))), path))
    return sorted(found)


def path_for(target: str | None) -> Path:
    files = available()
    if not files:
        raise FileNotFoundError(f"no torch semantics data under {DATA_DIR} (run tools/gen_torch_semantics.py)")
    if not target:
        return files[-1][1]
    wanted = _version(target)
    lower = [path for version, path in files if version <= wanted]
    return lower[-1] if lower else files[0][1]


def _version(text: str) -> tuple[int, int]:
    parts = [int(p) for p in re.findall(r"\d+", text)[:2]]
    return (parts + [0, 0])[0], (parts + [0, 0])[1]


@functools.lru_cache(maxsize=None)
def _load_path(path: Path) -> "Semantics":
    return Semantics(json.loads(path.read_text()), path)


# (data directory, target) -> its Semantics: ``load`` is asked once per op call the rules look at,
# and choosing the file lists the directory
_LOADED: dict[tuple[Path, str | None], "Semantics"] = {}


def load(target: str | None = None) -> "Semantics":
    """The semantics for ``target`` (a torch version, as ``target-torch`` spells it), read once."""
    key = (DATA_DIR, target)
    found = _LOADED.get(key)
    if found is None:
        found = _LOADED[key] = _load_path(path_for(target))
    return found


class Semantics:
    """Questions about one torch version's API, over its generated data."""

    def __init__(self, raw: dict, path: Path) -> None:
        self.path = path
        self.torch_version: str = raw["torch"]
        self._ops: dict[str, dict] = raw["ops"]
        self._aliases: dict[str, str] = raw.get("aliases", {})
        self._messages: list[str] = raw.get("messages", [])
        self._tensor_promotion: dict[str, str] = raw["promotion"]["tensor"]
        self._scalar_promotion: dict[str, str] = raw["promotion"]["scalar"]
        self._catalogue = {name: kind for kind, names in raw.get("catalogue", {}).items() for name in names}
        self._devices: dict[str, dict] = raw.get("devices", {})

    # -- names ------------------------------------------------------------------------------------
    def entry(self, name: str) -> dict | None:
        """The op or module entry for ``name`` (aliases followed), or None."""
        name = _normal(name)
        found = self._ops.get(name)
        if found is None and name in self._aliases:
            found = self._ops.get(self._aliases[name])
        return found

    def has(self, name: str) -> bool:
        name = _normal(name)
        return name in self._ops or name in self._aliases or name in self._catalogue

    def kind(self, name: str) -> str | None:
        """``op``, ``module`` (a torch.nn class), ``namespace``, ``dtype``, ``class``,
        ``nontensor`` (a function that returns no tensor), ``value``, ``tensor`` (returns a
        tensor by an unknown rule), ``unknown``; None for a name the data does not hold."""
        entry = self.entry(name)
        if entry is not None:
            return "module" if entry.get("module") else "op"
        found = self._catalogue.get(_normal(name))
        if found is not None and found.startswith("dtype:"):
            return "dtype"
        return found

    def describes(self, name: str) -> bool:
        """Whether the data says what ``name`` does to dtypes (a rule, or that it makes no tensor)."""
        entry = self.entry(name)
        if entry is not None:
            return entry.get("out") is not None
        kind = self.kind(name)
        return kind == "dtype" or kind in _DESCRIBED_KINDS

    def dtype_constant(self, name: str) -> str | None:
        """``torch.float16`` -> ``fp16``; ``torch.int32`` -> ``int32``."""
        found = self._catalogue.get(_normal(name))
        return found.split(":", 1)[1] if found is not None and found.startswith("dtype:") else None

    # -- dtypes ---------------------------------------------------------------------------------
    def promote(self, a: str, b: str) -> str | None:
        """torch.promote_types for two tensor dtypes."""
        return self._tensor_promotion.get(f"{a}+{b}")

    def output_dtype(self, op: str, operands: Sequence[str | None], kwargs: Mapping[str, str | None] | None = None,
                     *, module: str | None = None, default_float: str = "fp32") -> str | None:
        """The dtype of ``op``'s (first) tensor output, or None when unknown or when the call raises.

        ``operands``: the dtypes of the tensors the call receives, in order (for a method, the
        receiver first), and Python scalars as ``SCALAR_*``; for a ``torch.nn`` module, its
        inputs, with ``module`` its parameters' dtype. ``kwargs``: ``{"dtype": code}`` when
        the call passes ``dtype=`` or a dtype positionally (``x.to(torch.float16)``; None: a
        dtype the analysis does not know).
        """
        entry = self.entry(op)
        if entry is None or entry.get("out") in (None, "none", "children"):
            return None  # ``children``: a container (``nn.Sequential``): its last child decides
        if kwargs and "dtype" in kwargs and entry.get("kw") == "dtype":
            return kwargs["dtype"]
        rule = entry["out"]
        if isinstance(rule, str) and rule.startswith("="):
            return rule[1:]
        if rule == "default":
            return default_float
        if any(operand is None for operand in operands):
            return None
        tensors = [o for o in operands if o not in _SCALAR_KIND]
        scalars = [o for o in operands if o in _SCALAR_KIND]
        if rule == "arg":
            # ``x.to(other)`` / ``x.type_as(other)``: the other tensor's dtype; ``x.to("cuda")``: x's
            if kwargs and "dtype" in kwargs:
                return kwargs["dtype"]
            tensors = [o for o in operands if o not in _SCALAR_KIND]
            return tensors[-1] if tensors else None
        if rule == "scalars":
            if tensors:
                return self._combine(tensors, "promote")
            return self._from_scalars(scalars, default_float)
        if entry.get("module"):
            return self._module_output(entry, rule, tensors, module)
        if not tensors:
            if scalars and entry.get("mix") == "promote" and rule == "same":
                # only Python numbers beside a boolean selector: ``torch.where(c, 1.0, 0.0)`` is
                # the default float, as ``torch.tensor`` of those numbers would be
                return self._from_scalars(scalars, default_float)
            return None
        base = self._combine(tensors, entry.get("mix", "promote"))
        if base is None:
            return None
        if entry.get("mix") == "promote":
            # Python numbers take part only where tensors promote (``torch.where(c, 1.0, 0.0)``,
            # ``x + 0.5``); ``x.masked_fill(m, 0.5)`` keeps x's dtype
            for scalar in scalars:
                base = self._with_scalar(base, scalar, default_float)
        return _apply(rule, base, default_float)

    def raises(self, op: str, operands: Sequence[str | None], *, module: str | None = None) -> str | None:
        """torch's error when ``op`` gets these float operands together (``mat1 and mat2 must
        have the same dtype``), or None (no error known, or a dtype unknown)."""
        entry = self.entry(op)
        if entry is None or "mix" not in entry or any(o is None for o in operands):
            return None
        tensors = [o for o in operands if o not in _SCALAR_KIND]
        first = module if entry.get("module") else (tensors[0] if tensors else None)
        others = tensors if entry.get("module") else tensors[1:]
        if first not in FLOATS:
            return None
        mix = entry["mix"]
        for other in others:
            if other not in FLOATS or other == first:
                continue
            if mix == "raise" or isinstance(mix, dict) and _ordered(mix, first, other) == "raise":
                return self._message(entry.get("err")) or f"{op}: operands of different dtypes ({first}, {other})"
        return None

    def kernel_missing(self, op: str, dtype: str, device: str) -> bool | None:
        """True when ``op`` has no kernel for ``dtype`` on ``device`` (``cpu`` or ``cuda``),
        False when it has one, None when the data does not say."""
        entry = self.entry(op)
        missing = entry.get("nok", {}).get(device) if entry is not None else None
        if missing is None:
            return None
        return dtype in missing

    def device_lacks(self, dtype: str, device: str) -> bool | None:
        """True when ``device`` has no kernel for ``dtype`` in any op, so no tensor of it at all
        (MPS: float64), False when the data lists the device with it, None when it does not list
        the device (CPU and CUDA: ask ``kernel_missing`` per op)."""
        found = self._devices.get(device)
        return None if found is None else dtype in found.get("none", ())

    def kernel_error(self, op: str) -> str | None:
        """The error torch raised on CPU for a low dtype without a kernel, when recorded."""
        entry = self.entry(op)
        return self._message(entry.get("nok_err")) if entry is not None else None

    def autocast_policy(self, op: str, device: str = "cuda") -> str | None:
        """What autocast does to ``op`` on ``device``: ``lower`` (runs in the region's low
        dtype), ``fp32`` (runs in float32), ``promote`` (widest input dtype); None: it runs in
        its inputs' dtype, or the data does not know."""
        entry = self.entry(op)
        return entry.get("amp", {}).get(device) if entry is not None else None

    def range_sensitive(self, op: str, dtype: str = "fp16") -> RangeFact | None:
        """How ``op`` overflows or loses precision in ``dtype``, or None when neither was seen
        and CUDA autocast does not run it in float32."""
        entry = self.entry(op)
        if entry is None:
            return None
        seen = entry.get("range", {}).get(dtype)
        autocast = entry.get("amp", {}).get("cuda") == "fp32"
        if seen is None and not autocast:
            return None
        how, scale = (seen[0], seen[1]) if seen else (None, None)
        return RangeFact(dtype=dtype, how=how, scale=scale, autocast=autocast)

    def rounding_scale(self, op: str, dtype: str) -> float | None:
        """The input magnitude from which rounding ``op``'s argument to ``dtype`` (the op itself
        then run in float32) moves its result past the tolerance: ``sin``/``cos`` of an angle made
        in float16/bfloat16 have lost the phase by 64 rad. None: never seen, or not probed."""
        entry = self.entry(op)
        if entry is None:
            return None
        scale = entry.get("rounding", {}).get(dtype)
        return float(scale) if isinstance(scale, (int, float)) else None

    def operand_positions(self, op: str) -> tuple[tuple[int, ...], frozenset[str]] | None:
        """Which arguments are operands: positional indices (after a method's receiver) and
        keyword names, from torch's stubs (``add``'s ``other``, not ``roll``'s ``shifts``);
        None when not recorded (then tensor-valued arguments are the operands)."""
        entry = self.entry(op)
        if entry is None or "opnd" not in entry:
            return None
        if not op.startswith("Tensor.") and not entry["opnd"] and not entry.get("opkw") \
                and entry.get("out") in ("same", "widen", "promote"):
            # a function whose result follows its inputs, yet no named parameter is an operand:
            # they come through ``*operands`` (``einsum(equation, *operands)``), which the stubs
            # do not list; the tensor-valued arguments are the operands
            return None
        return tuple(entry["opnd"]), frozenset(entry.get("opkw", ()))

    def names(self, where: str | None = None) -> Iterable[str]:
        """Op and module names (``where``: keep those with this key, e.g. ``nok``)."""
        return (name for name, entry in self._ops.items() if where is None or where in entry)

    # -- helpers --------------------------------------------------------------------------------
    def _combine(self, tensors: list[str], mix) -> str | None:
        result = tensors[0]
        for other in tensors[1:]:
            if other == result:
                continue
            both_float = result in FLOATS and other in FLOATS
            if both_float and mix == "raise":
                return None
            if both_float and mix == "first":
                continue
            if both_float and isinstance(mix, dict):
                found = _ordered(mix, result, other)
                if found is None or found == "raise":
                    return None
                if found in (result, other):
                    result = found
                    continue
            promoted = self.promote(result, other)
            if promoted is None:
                return None
            result = promoted
        return result

    def _with_scalar(self, base: str, scalar: str, default_float: str) -> str:
        found = self._scalar_promotion.get(f"{base}+{_SCALAR_KIND[scalar]}", base)
        if found == "fp32" and base not in FLOATS:
            return default_float  # an integer tensor with a Python float: the default dtype
        return found

    def _from_scalars(self, scalars: list[str], default_float: str) -> str | None:
        kinds = {_SCALAR_KIND[s] for s in scalars}
        if "float" in kinds:
            return default_float
        if "int" in kinds:
            return "int"
        if "bool" in kinds:
            return "bool"
        return None

    def _module_output(self, entry: dict, rule, inputs: list[str], module: str | None) -> str | None:
        if rule == "same":  # no floating parameters: its input's dtype
            return inputs[0] if inputs else None
        if rule != "module" or module is None:
            return None
        floating = [i for i in inputs if i in FLOATS]
        if not floating or floating[0] == module or module not in FLOATS:
            return module
        mix = entry.get("mix")
        if mix == "raise":
            return None
        if mix == "first":  # the input is cast to the parameters' dtype (``Embedding``'s indices)
            return module
        if mix == "promote":
            return self.promote(module, floating[0])
        if isinstance(mix, dict):
            found = _ordered(mix, module, floating[0])
            return None if found in (None, "raise") else found
        return None

    def _message(self, index) -> str | None:
        if isinstance(index, int) and 0 <= index < len(self._messages):
            return self._messages[index]
        return None


def _normal(name: str) -> str:
    return "Tensor." + name[len("torch.Tensor."):] if name.startswith("torch.Tensor.") else name


def _ordered(mix: dict, first: str, other: str) -> str | None:
    """The recorded outcome for (first, other); only float32/float16 pairs are recorded, and a
    pair of other floats (bfloat16, float64) is read as the same order of a narrow and a wide one."""
    def width(code: str) -> str:
        return "fp16" if code in ("fp16", "bf16") else "fp32"

    found = mix.get(f"{width(first)}+{width(other)}")
    if found in ("fp16", "fp32") and width(first) != width(other):
        return first if found == width(first) else other  # "the narrow one" / "the wide one"
    return found


def _apply(rule, base: str, default_float: str) -> str | None:
    if rule == "same":
        return base
    if rule == "float":
        return base if base in FLOATS else default_float
    if rule == "widen":
        return base if base in FLOATS else "int"
    if isinstance(rule, dict):
        return rule.get(base)
    return None


# -- the default version's answers, for callers without settings ------------------------------------
def output_dtype(op: str, operands: Sequence[str | None], kwargs: Mapping[str, str | None] | None = None, *,
                 module: str | None = None, default_float: str = "fp32", torch: str | None = None) -> str | None:
    return load(torch).output_dtype(op, operands, kwargs, module=module, default_float=default_float)


def raises(op: str, operands: Sequence[str | None], *, module: str | None = None, torch: str | None = None) -> str | None:
    return load(torch).raises(op, operands, module=module)


def kernel_missing(op: str, dtype: str, device: str, *, torch: str | None = None) -> bool | None:
    return load(torch).kernel_missing(op, dtype, device)


def autocast_policy(op: str, device: str = "cuda", *, torch: str | None = None) -> str | None:
    return load(torch).autocast_policy(op, device)


def range_sensitive(op: str, dtype: str = "fp16", *, torch: str | None = None) -> RangeFact | None:
    return load(torch).range_sensitive(op, dtype)


def rounding_scale(op: str, dtype: str, *, torch: str | None = None) -> float | None:
    return load(torch).rounding_scale(op, dtype)

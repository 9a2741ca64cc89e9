"""What a Hugging Face ``datasets`` table gives back: Python objects, whatever was stored.

``Dataset.map(fn)`` stores what ``fn`` returns in Arrow columns (a float16 or float32 tensor
becomes a float column); without ``set_format``/``with_format`` a row read back holds Python
lists of Python floats, so ``torch.tensor(example["prompt_embeds"])`` in a ``collate_fn`` is
torch's default float dtype (float32), whatever dtype the text encoder produced. The accelerate
training scripts that precompute embeddings this way then feed float32 to a model they cast to
``weight_dtype`` and run outside autocast (huggingface/diffusers 8ead643: ``prompt_embeds =
batch["prompt_embeds"]`` needed ``.to(dtype=weight_dtype)``).

A table's value (kind ``instance``, ``info`` a ``Table``) keeps the columns known to hold floats:
those a ``.map`` function returns as float tensors of known dtypes. A column of unknown dtype
(token ids are integers: ``torch.tensor`` makes int64 of them) is not kept. A file that changes a
table's format (``set_format``, ``with_format``, ``set_transform``: rows become tensors or NumPy
arrays of the stored dtype) gets no table at all.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from dtype_lint.facts.flow.values import FLOATS, INSTANCE, MAPPING, NUMPY, TENSOR, TUPLE, Origin, Value, make
from dtype_lint.facts.training import walk

# Calls that make a table (or a DatasetDict of tables: ``dataset["train"]`` is a table too).
SOURCES = frozenset(
    """datasets.load_dataset datasets.load_from_disk datasets.Dataset.from_dict datasets.Dataset.from_list
    datasets.Dataset.from_pandas datasets.Dataset.from_generator datasets.Dataset.from_csv
    datasets.Dataset.from_json datasets.Dataset.from_parquet datasets.arrow_dataset.Dataset.from_dict""".split()
)
CONCATENATE = frozenset({"datasets.concatenate_datasets"})
# Methods whose result has the same columns and the same (Python) format.
SAME_ROWS = frozenset(
    "select shuffle filter sort flatten_indices train_test_split shard take skip cast_column".split()
)
MAP = "map"
WITH_TRANSFORM = "with_transform"
DROP_COLUMNS = frozenset({"remove_columns", "select_columns", "rename_column", "rename_columns"})
# Spellings that change how rows come back, anywhere in a file: no table is made there.
FORMAT_WORDS = ("set_format", "with_format", "set_transform", "format_type")
PARTIAL = frozenset({"functools.partial"})
# A Python value read from a float column: ``torch.tensor`` of it is the default float dtype.
PY_FLOATS = "python_floats"


class ColumnOrigin(Origin):
    """A dtype made of a ``datasets`` float column read back as Python floats: said so, since the
    line alone (``torch.tensor(example["prompt_embeds"])``) does not tell why it is float32."""

    __slots__ = ()

    def describe(self) -> str:
        return f"line {self.line} (`{self.text}`: a `datasets` row holds Python floats, whatever dtype was stored)"


@dataclasses.dataclass(frozen=True)
class Table:
    """A ``datasets`` table read in Python format; ``floats``: the columns holding floats."""

    floats: tuple = ()


@dataclasses.dataclass(frozen=True)
class Partial:
    """``functools.partial(fn, **kw)``: the function's name and the values of the keywords."""

    name: str
    keywords: tuple = ()


def formats_rows(ctx) -> bool:
    """The file changes a table's row format somewhere (tensors / arrays instead of lists)."""
    return any(word in ctx.text for word in FORMAT_WORDS)


def table(floats=()) -> Value:
    return make(INSTANCE, info=Table(tuple(sorted(set(floats)))))


def table_of(value: Value | None) -> Table | None:
    return value.info if value is not None and value.kind == INSTANCE and isinstance(value.info, Table) else None


def float_columns(returned: Value | None) -> tuple:
    """The keys of a ``.map`` function's returned dict whose values are float tensors (or arrays)
    on the paths the analysis knows: a column holds one type, so a float stored on one path makes
    it a float column (a path left unknown, such as a library model's output, adds none)."""
    if returned is None or returned.kind != MAPPING or returned.keys is None:
        return ()
    found = []
    for key, item in zip(returned.keys, returned.items):
        if key is not None and item is not None and item.kind in (TENSOR, NUMPY) and item.dtypes \
                and item.dtypes <= FLOATS:
            found.append(key)
    return tuple(found)


def row(value: Value) -> Value | None:
    """One row of a table as a ``collate_fn`` gets it: a dict whose float columns are Python floats."""
    info = table_of(value)
    if info is None:
        return None
    column = make(TUPLE, info=PY_FLOATS)
    return make(MAPPING, keys=info.floats, items=tuple(column for _ in info.floats))


def assigned_keys(function: cst.FunctionDef) -> frozenset[str] | None:
    """The string keys a row transform writes (``examples["pixel_values"] = ...``), or None when
    it returns anything but the batch it was given (its rows are then what it builds)."""
    params = function.params.params
    if not params:
        return None
    given = params[0].name.value
    keys = set()
    for node in walk(function.body):
        if isinstance(node, cst.Return):
            if not (isinstance(node.value, cst.Name) and node.value.value == given):
                return None
        if isinstance(node, (cst.Assign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                        and target.value.value == given:
                    for element in target.slice:
                        index = element.slice.value if isinstance(element.slice, cst.Index) else None
                        if isinstance(index, cst.SimpleString):
                            keys.add(index.evaluated_value)
                        else:
                            return None
    return frozenset(keys)


def python_floats(value: Value | None) -> bool:
    """A float column's Python value, or a list of them (``[row["features"] for row in rows]``)."""
    if value is None or value.kind != TUPLE:
        return False
    if value.info == PY_FLOATS:
        return True
    if value.items:
        return all(python_floats(item) for item in value.items)
    return value.items in (None, ()) and python_floats(value.element)


def _strings(node: cst.BaseExpression | None) -> list[str] | None:
    """``"a"`` or ``["a", "b"]`` as a list of strings; None for anything else."""
    if isinstance(node, cst.SimpleString):
        return [node.evaluated_value]
    if isinstance(node, (cst.List, cst.Tuple)):
        values = [e.value.evaluated_value if isinstance(e.value, cst.SimpleString) else None for e in node.elements]
        return values if all(isinstance(v, str) for v in values) else None
    return None


def columns_left(method: str, floats: tuple, node: cst.Call) -> tuple:
    """The float columns left after ``remove_columns`` / ``select_columns`` / ``rename_column(s)``
    with literal names (none are followed when the names cannot be read)."""
    args = [a.value for a in node.args if a.keyword is None]
    if method == "rename_column" and len(args) == 2:
        old, new = _strings(args[0]), _strings(args[1])
        if old and new:
            return tuple(new[0] if c == old[0] else c for c in floats if c != new[0] or c == old[0])
        return ()
    if method == "rename_columns" and args and isinstance(args[0], cst.Dict):
        renames = {}
        for element in args[0].elements:
            key = _strings(getattr(element, "key", None))
            value = _strings(getattr(element, "value", None))
            if not key or not value:
                return ()
            renames[key[0]] = value[0]
        return tuple(renames.get(c, c) for c in floats if c not in renames.values() or c in renames)
    names = _strings(args[0]) if args else None
    if names is None:
        return ()
    if method == "remove_columns":
        return tuple(c for c in floats if c not in names)
    if method == "select_columns":
        return tuple(c for c in floats if c in names)
    return ()

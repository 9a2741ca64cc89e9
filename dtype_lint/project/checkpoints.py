"""Checkpoint dtypes across files: what a checkpoint holds is decided where it is saved.

``torch.save(obj, path)`` fixes the dtype of what ``torch.load(path)`` gives back, in whatever
file loads it. Three save shapes carry a low dtype (``saves_in``, on CPython's ``ast``, run by the
summary):

- a dict (literal, or a name bound to one in the same function) whose value under a key is cast
  low: ``{"model": deepcopy(model).half(), "epoch": e}`` (a module when the receiver is a copy of
  one or the key names a model; a tensor otherwise), or the ``state_dict()`` of a model this
  function cast low;
- a state-dict comprehension of low tensors: ``{k: v.half() for k, v in sd.items() if "lora_" in k}``
  (its ``if`` literals say which keys it holds);
- ``torch.save(model.state_dict(), ...)`` (or ``torch.save(model, ...)``) after ``model.half()``.

Paths do not match reliably (``opt.weights`` vs ``"weights/last.pt"``), so a load matches a
save of the same project by key: ``torch.load(p)["model"]`` is the module saved under
``"model"``; ``state[f"{name}.lora_A"]`` is a tensor of a keyless state dict whose ``if``
literal (``"lora_"``) the key's text contains. A state dict saved whole (no key, no filter)
holds any key, so its keys say nothing: a load matches it only through its path, a file name
or a dotted setting both path expressions spell (``"pytorch_model.bin"``, ``args.lora_path``).
A project of many programs saves many state dicts; a load of another path is none of them.
A match through keys only is never certain: the findings are medium confidence.
"""

from __future__ import annotations

import ast
import dataclasses
import re

import libcst as cst

from dtype_lint.facts.flow import values
from dtype_lint.facts.names import dotted_name
from dtype_lint.project.seeding import WorldOrigin
from dtype_lint.project.summary import _dotted, float32_casts

LOADERS = frozenset({"torch.load", "safetensors.torch.load_file"})
SAVERS = frozenset({"torch.save", "safetensors.torch.save_file"})
# Keys under which a checkpoint conventionally stores a whole module (YOLOv5's "model"/"ema").
MODULE_KEYS = re.compile(r"(^|_)(model|ema|module|net|network|generator|discriminator|encoder|decoder|unet|"
                         r"backbone|teacher|student)s?($|_)", re.IGNORECASE)
COPIES = frozenset({"deepcopy", "copy.deepcopy"})
MODULE, TENSOR, STATE = "module", "tensor", "state"


# -- the save side (ast, per file) -------------------------------------------------------------
def _qualified(imports: dict, dotted: str | None) -> list[str]:
    if not dotted:
        return []
    head, _, rest = dotted.partition(".")
    return [f"{target}.{rest}" if rest else target for target in imports.get(head, ())]


def is_loader(imports: dict, dotted: str | None) -> bool:
    return any(name in LOADERS for name in _qualified(imports, dotted))


def _path_words(strings: list[str], dotted: list[str]) -> list[str]:
    """The words of a path expression that can tie a save to a load: the file and folder names
    its string literals spell (not a bare extension, not one or two letters) and the dotted
    settings it reads (``args.output_dir``; a bare name like ``path`` is any path)."""
    words = {part for text in strings for part in re.split(r"[/\\]", text) if len(part) > 2 and not part.startswith(".")}
    words.update(name for name in dotted if "." in name)
    return sorted(words)


def save_path_words(node: ast.AST | None) -> list[str]:
    """``_path_words`` of a ``torch.save`` path (CPython's ``ast``)."""
    if node is None:
        return []
    strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    names = [_dotted(n) or "" for n in ast.walk(node) if isinstance(n, ast.Attribute)]
    return _path_words(strings, names)


def load_path_words(node: cst.CSTNode | None) -> tuple[str, ...]:
    """``_path_words`` of a ``torch.load`` path (libcst)."""
    if node is None:
        return ()
    strings, names = [], []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.SimpleString):
            text = current.evaluated_value
            strings.extend([text] if isinstance(text, str) else [])
        elif isinstance(current, cst.FormattedStringText):
            strings.append(current.value)
        elif isinstance(current, cst.Attribute):
            names.append(dotted_name(current) or "")
        stack.extend(current.children)
    return tuple(_path_words(strings, names))


def _same_path(saved: tuple, loaded: tuple) -> bool:
    """A word of the save's path that the load's path spells too (``"ckpt_"`` of an f-string
    is part of ``"ckpt_best.pt"``)."""
    return any(a == b or (len(a) > 3 and len(b) > 3 and (a in b or b in a)) for a in saved for b in loaded)


def _strings(node: ast.AST) -> list[str]:
    return sorted({n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value})


def saves_in(summarizer, nodes, scope, cast_names: dict, conditions) -> list[dict]:
    """The low-precision checkpoints the ``torch.save`` calls among ``nodes`` write."""
    dicts: dict[str, ast.Dict] = {}
    for node in nodes:
        if type(node) is ast.Assign and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, (ast.Dict, ast.DictComp)):
            dicts.setdefault(node.targets[0].id, node.value)
    # a model halved and cast back in the same function (``model.half()`` ... ``model.float()``): the
    # summary's casts are flow-insensitive, so its state dict is not known low
    restored = set(float32_casts(nodes))
    cast_names = {name: cast for name, cast in cast_names.items() if name not in restored}
    found: list[dict] = []
    for node in nodes:
        if type(node) is not ast.Call or not node.args:
            continue
        name = _dotted(node.func)
        if not any(q in SAVERS for q in _qualified(summarizer.imports, name)):
            continue
        obj = node.args[0]
        if isinstance(obj, ast.Name) and obj.id in dicts:
            obj = dicts[obj.id]
        condition = conditions.get(id(node))
        path = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg in ("f", "filename")), None)
        for entry in _saved(summarizer, obj, scope, cast_names):
            entry.update({"line": entry.get("line", node.lineno), "save": node.lineno,
                          "conditional": entry.get("conditional", False) or condition is not None,
                          "paths": save_path_words(path)})
            found.append(entry)
    return found


def _saved(summarizer, obj: ast.AST, scope, cast_names: dict) -> list[dict]:
    if isinstance(obj, ast.Dict):
        entries = []
        for key, value in zip(obj.keys, obj.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            entry = _low_value(summarizer, value, scope, cast_names, key.value)
            if entry is not None:
                entries.append({**entry, "key": key.value, "filters": []})
        return entries
    if isinstance(obj, ast.DictComp) and isinstance(obj.value, ast.Call):
        cast = summarizer._cast_dtype(obj.value, scope)
        if cast is None or cast[0].startswith("param:"):
            return []
        filters = [s for generator in obj.generators for test in generator.ifs for s in _strings(test)]
        return [{"kind": STATE, "key": None, "filters": sorted(set(filters)), "dtype": cast[0],
                 "conditional": cast[1], "line": obj.lineno, "text": summarizer._segment(obj.value)}]
    entry = _low_value(summarizer, obj, scope, cast_names, None)
    if entry is None or entry["kind"] != STATE:
        return []  # a whole module saved cast: ``torch.load`` gives it unsubscripted (not followed)
    return [{**entry, "key": None, "filters": []}]


def _low_value(summarizer, value: ast.AST, scope, cast_names: dict, key: str | None) -> dict | None:
    """``x.half()`` (a module or a tensor), ``model.state_dict()`` of a model cast low here."""
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return None
    if value.func.attr == "state_dict":
        owner = value.func.value
        cast = None
        if isinstance(owner, ast.Call):
            found = summarizer._cast_dtype(owner, scope)
            if found is not None and not found[0].startswith("param:"):
                cast = {"dtype": found[0], "conditional": found[1], "line": owner.lineno,
                        "text": summarizer._segment(owner)}
        else:
            cast = cast_names.get(_dotted(owner) or "")
        if cast is None:
            return None
        return {"kind": STATE, "dtype": cast["dtype"], "conditional": cast["conditional"], "line": cast["line"],
                "text": cast["text"]}
    cast = summarizer._cast_dtype(value, scope)
    if cast is None or cast[0].startswith("param:"):
        return None
    receiver = value.func.value
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) \
            and receiver.func.attr in ("to", "cuda", "cpu", "eval", "half", "float"):
        receiver = receiver.func.value
    copied = isinstance(receiver, ast.Call) and _dotted(receiver.func) in COPIES
    kind = MODULE if copied or (key is not None and MODULE_KEYS.search(key)) else TENSOR
    return {"kind": kind, "dtype": cast[0], "conditional": cast[1], "line": value.lineno,
            "text": summarizer._segment(value)}


# -- the project join ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Saved:
    """One low-precision entry of a checkpoint the project saves (see the module docstring)."""

    kind: str  # module | tensor | state
    key: str | None  # the dict key it is stored under; None: the saved object itself
    filters: tuple  # a keyless state dict's ``if`` literals (the keys it keeps)
    dtype: str
    path: str
    line: int
    text: str
    paths: tuple = ()  # the words of the path it is saved to (``_path_words``)

    def describe(self, base: str = "") -> str:
        from dtype_lint.facts.flow.values import LONG_NAMES
        from dtype_lint.project.worlds import World

        where = World(self.dtype, True, None, self.path, self.line, self.text).where(base)
        under = f" under `\"{self.key}\"`" if self.key else ""
        return f"the checkpoint saved at {where}{under} as {LONG_NAMES.get(self.dtype, self.dtype)} (`{self.text}`)"


def project_saves(summaries: dict[str, dict]) -> list[Saved]:
    """Every low-precision checkpoint entry of the project, in a fixed order."""
    found = set()
    for path, summary in summaries.items():
        for entry in summary.get("saves", ()):
            found.add(Saved(entry["kind"], entry["key"], tuple(entry["filters"]), entry["dtype"], path,
                            entry["line"], entry["text"], tuple(entry.get("paths", ()))))
    return sorted(found, key=lambda s: (s.path, s.line, s.kind, s.key or "", s.filters, s.dtype, s.text, s.paths))


def loads_checkpoints(summary: dict) -> bool:
    """The file calls ``torch.load`` / safetensors' ``load_file``."""
    return any(is_loader(summary["imports"], name) for name in summary.get("calls", ()))


# -- the load side (the flow, per file) ---------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CheckpointWorld:
    """What the checked file's loads may give: the project's low-precision saves, described."""

    saves: tuple  # ((Saved, description), ...)

    def key(self) -> list:
        return [[dataclasses.astuple(saved), words] for saved, words in self.saves]


@dataclasses.dataclass(frozen=True)
class LoadedCheckpoint:
    """The ``info`` of the MAPPING value a ``torch.load(...)`` call gives (or one of its entries
    that is itself a state dict)."""

    saves: tuple  # ((Saved, description), ...)
    keyed: bool = True  # indexing looks the key up among the saves' keys (False: a state dict's own keys)
    paths: tuple = ()  # the words of the loaded path (``load_path_words``)
    tied: bool = False  # already matched to its save (the state dict under a key that matched)


class CheckpointOrigin(WorldOrigin):
    """The origin of a loaded value: a checkpoint saved elsewhere in the project."""

    __slots__ = ()


def loaded(world: CheckpointWorld, call: cst.Call):
    """The value of a ``torch.load(...)`` call: a mapping looked up by ``indexed``."""
    path = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "f"), None)
    return values.make(values.MAPPING, info=LoadedCheckpoint(world.saves, paths=load_path_words(path)))


def _key_texts(index: cst.BaseExpression | None) -> tuple[str | None, list[str]]:
    """(the key when it is a plain string, the literal parts of its text)."""
    if isinstance(index, cst.SimpleString):
        text = index.evaluated_value
        return (text, [text]) if isinstance(text, str) else (None, [])
    if isinstance(index, cst.FormattedString):
        parts = [p.value for p in index.parts if isinstance(p, cst.FormattedStringText)]
        return None, parts
    return None, []


def _matches(saved: Saved, literals: list[str]) -> bool:
    if not saved.filters:
        return True
    return any(f in text for f in saved.filters for text in literals)


def indexed(info: LoadedCheckpoint, index: cst.BaseExpression | None, node, origin_for):
    """What ``checkpoint[index]`` holds, or None when no save matches."""
    key, literals = _key_texts(index)
    for saved, words in info.saves:
        if info.keyed and saved.key is not None:
            if key != saved.key:
                continue
            if saved.kind == STATE:
                return values.make(values.MAPPING, info=LoadedCheckpoint(((dataclasses.replace(saved, key=None), words),),
                                                                      keyed=False, tied=True))
        elif saved.kind != STATE or not _matches(saved, literals) or (info.keyed and key is None and not literals):
            continue
        elif not saved.filters and not info.tied and not _same_path(saved.paths, info.paths):
            continue  # a whole state dict holds any key: only the path ties this load to it
        origin = CheckpointOrigin(node, origin_for(node)._resolve, words)
        kind = values.MODULE if saved.kind == MODULE else values.TENSOR
        return values.make(kind, (saved.dtype,), origin)
    return None

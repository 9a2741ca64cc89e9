"""Checkpoint dtypes across files: what a checkpoint holds is decided where it is saved (the
load side, run by the flow: facts/flow/checkpoint_loads.py).

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

from dtype_lint.facts.flow.checkpoint_loads import LOADERS, MODULE, STATE, TENSOR, path_words
from dtype_lint.project.summary import _dotted, float32_casts

SAVERS = frozenset({"torch.save", "safetensors.torch.save_file"})
# Keys under which a checkpoint conventionally stores a whole module (YOLOv5's "model"/"ema").
MODULE_KEYS = re.compile(r"(^|_)(model|ema|module|net|network|generator|discriminator|encoder|decoder|unet|"
                         r"backbone|teacher|student)s?($|_)", re.IGNORECASE)
COPIES = frozenset({"deepcopy", "copy.deepcopy"})


# -- the save side (ast, per file) -------------------------------------------------------------
def _qualified(imports: dict, dotted: str | None) -> list[str]:
    if not dotted:
        return []
    head, _, rest = dotted.partition(".")
    return [f"{target}.{rest}" if rest else target for target in imports.get(head, ())]


def is_loader(imports: dict, dotted: str | None) -> bool:
    return any(name in LOADERS for name in _qualified(imports, dotted))


def save_path_words(node: ast.AST | None) -> list[str]:
    """``path_words`` of a ``torch.save`` path (CPython's ``ast``)."""
    if node is None:
        return []
    strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    names = [_dotted(n) or "" for n in ast.walk(node) if isinstance(n, ast.Attribute)]
    return path_words(strings, names)


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
    paths: tuple = ()  # the words of the path it is saved to (``path_words``)

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

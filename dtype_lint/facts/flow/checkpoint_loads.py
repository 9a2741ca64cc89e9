"""What a ``torch.load(...)`` gives in the per-file flow, when the project saves low-precision
checkpoints (the save side and the matching rules: project/checkpoints.py).

The project pass hands the interpreter a :class:`CheckpointWorld`: the project's low-precision
saves, each with its description. A load is a MAPPING value whose entries are looked up by key
(``ckpt["model"]``) or, for a state dict saved whole, tied to a save through the words both path
expressions spell. Saves are duck-typed records (``kind``, ``key``, ``filters``, ``dtype``,
``paths``) so this module never imports the project pass.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from dtype_lint.facts.flow import values
from dtype_lint.facts.flow.seeding import WorldOrigin
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import child_nodes

LOADERS = frozenset({"torch.load", "safetensors.torch.load_file"})
MODULE, TENSOR, STATE = "module", "tensor", "state"


def path_words(strings: list[str], dotted: list[str]) -> list[str]:
    """The words of a path expression that can tie a save to a load: the file and folder names
    its string literals spell (not a bare extension, not one or two letters) and the dotted
    settings it reads (``args.output_dir``; a bare name like ``path`` is any path)."""
    words = {part for text in strings for part in re.split(r"[/\\]", text) if len(part) > 2 and not part.startswith(".")}
    words.update(name for name in dotted if "." in name)
    return sorted(words)


def load_path_words(node: cst.CSTNode | None) -> tuple[str, ...]:
    """``path_words`` of a ``torch.load`` path (libcst)."""
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
        stack.extend(child_nodes(current))
    return tuple(path_words(strings, names))


def same_path(saved: tuple, loaded: tuple) -> bool:
    """A word of the save's path that the load's path spells too (``"ckpt_"`` of an f-string
    is part of ``"ckpt_best.pt"``)."""
    return any(a == b or (len(a) > 3 and len(b) > 3 and (a in b or b in a)) for a in saved for b in loaded)


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


def _matches(saved, literals: list[str]) -> bool:
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
        elif not saved.filters and not info.tied and not same_path(saved.paths, info.paths):
            continue  # a whole state dict holds any key: only the path ties this load to it
        origin = CheckpointOrigin(node, origin_for(node)._resolve, words)
        kind = values.MODULE if saved.kind == MODULE else values.TENSOR
        return values.make(kind, (saved.dtype,), origin)
    return None

"""How the project's own shell scripts launch a Python file: the flags each command passes.

A training script that takes its precision from the command line (``HfArgumentParser`` with
``TrainingArguments``: ``--fp16`` / ``--bf16``) runs in whatever precision its launcher asks
for. Its repository usually ships those launchers: InternVL's 97 ``shell/**/*.sh`` scripts all
run ``python -u internvl/train/internvl_chat_finetune.py ... --bf16 True ...``. A premise that
needs the other flag (a bfloat16 model under ``--fp16``'s GradScaler, Qwen-VL#372, whose
``finetune_lora.sh`` did pass ``--fp16 True``) then holds only for a user who changes the
launch the project gives; a rule can say so at low confidence.

Where: the ``*.sh`` files under the checked project's root (the settings' root, the working
directory of a run, when the file lies inside it), read as text, never run. A command runs the
file when one of its words ending in ``.py`` names it relative to the script's folder or one of
that folder's parents up to the root (scripts are started from the repository or a sub-project
folder: ``internvl_chat/shell/x.sh`` runs ``internvl/train/f.py`` from ``internvl_chat``). Its
flags are the words after that one: ``--name value``, ``--name=value``, or ``--name`` alone
(a switch: value None). A ``"$@"``/``$*`` after it passes the caller's arguments on: that
command's flags are open (``Launch.open``).

Only a file that exists on disk inside the root is looked up (a text checked alone has no
launchers). The scripts are read once per root per process, as untrusted files (tree_files: a
symlink, a FIFO or a device named ``*.sh`` is skipped, never followed or opened to block). What
they say of a file is part of its cache key (``cache_key``): a report cached for a file is
checked again when a script that launches it changes.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shlex

from dtype_lint.tree_files import read_regular_file

MAX_BYTES = 256 * 1024
MAX_SCRIPTS = 2000
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", "site-packages"})
_CONTINUATION = re.compile(r"\\\r?\n")
_TRUE = frozenset({"true", "1", "yes", "on"})


@dataclasses.dataclass(frozen=True)
class Launch:
    """One command of a script that runs the file: its flags (name -> value, None for a bare
    switch), whether it passes on its caller's arguments, and where it is."""

    flags: tuple[tuple[str, str | None], ...]
    open: bool
    where: str  # "shell/finetune.sh:12", relative to the root

    def value(self, name: str) -> tuple[bool, str | None]:
        """(given, value) of ``--name``."""
        for flag, value in self.flags:
            if flag == name:
                return True, value
        return False, None

    def asks(self, name: str) -> bool:
        """``--name`` is on in this command: a bare switch, a true value, or one the shell fills
        in (``--fp16 ${FP16}``); or the command passes its caller's arguments on."""
        given, value = self.value(name)
        if not given:
            return self.open
        return value is None or value.strip("'\"").lower() in _TRUE or "$" in value


def launches(ctx) -> list[Launch] | None:
    """The commands of the project's shell scripts that run the file of ``ctx``; None when the
    file is not on disk inside the root or no script runs it."""
    found = _launches_of(getattr(ctx.settings, "root", None), ctx.path)
    return list(found) if found else None


def cache_key(settings, path: str) -> str:
    """What the scripts say of the file at ``path``, as text for its cache key ('' for nothing)."""
    found = _launches_of(getattr(settings, "root", None), path)
    return repr(found) if found else ""


def _launches_of(root: str | None, path: str) -> tuple[Launch, ...] | None:
    root = os.path.abspath(root or ".")
    path = os.path.abspath(path)
    if not os.path.isfile(path) or os.path.commonpath([root, path]) != root:
        return None
    return _launches_under(root).get(path)


@functools.lru_cache(maxsize=64)
def _launches_under(root: str) -> dict[str, tuple[Launch, ...]]:
    """Python file (absolute) -> the commands that run it, for every script under ``root``."""
    by_file: dict[str, list[Launch]] = {}
    for script in _scripts(root):
        data = read_regular_file(script, MAX_BYTES, follow_symlinks=False)
        if data is None:
            continue  # too big, or not a regular file of the tree
        text = data.decode("utf-8", errors="replace")
        display = os.path.relpath(script, root)
        bases = _bases(os.path.dirname(script), root)
        for line, words in _commands(text):
            for index, word in enumerate(words):
                if not word.endswith(".py") or word.startswith("-"):
                    continue
                target = next((p for p in (os.path.normpath(os.path.join(b, word)) for b in bases) if os.path.isfile(p)), None)
                if target is None:
                    continue
                flags, passes_on = _flags(words[index + 1:])
                by_file.setdefault(target, []).append(Launch(flags, passes_on, f"{display}:{line}"))
                break
    return {path: tuple(found) for path, found in by_file.items()}


def _scripts(root: str) -> list[str]:
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        found.extend(os.path.join(directory, name) for name in sorted(files) if name.endswith(".sh"))
        if len(found) >= MAX_SCRIPTS:
            break
    return found[:MAX_SCRIPTS]


def _bases(directory: str, root: str) -> list[str]:
    """The script's folder and its parents up to ``root``: where the script may be started."""
    bases = [directory]
    while directory != root and os.path.dirname(directory) != directory:
        directory = os.path.dirname(directory)
        bases.append(directory)
    return bases


def _commands(text: str):
    """(first line, words) of each logical command: continuation lines joined, comments and
    ``;``/``&&``/``||``/``|`` separators split off."""
    joined = _CONTINUATION.sub("\u0000", text)
    line = 1
    for raw in joined.split("\n"):
        start, line = line, line + 1 + raw.count("\u0000")
        logical = raw.replace("\u0000", " ")
        if "py" not in logical:
            continue
        try:
            words = shlex.split(logical, comments=True, posix=True)
        except ValueError:
            words = logical.split()
        command: list[str] = []
        for word in words:
            if word in (";", "&&", "||", "|", "&"):
                if command:
                    yield start, command
                command = []
                continue
            command.append(word)
        if command:
            yield start, command


def _flags(words: list[str]) -> tuple[tuple[tuple[str, str | None], ...], bool]:
    flags: list[tuple[str, str | None]] = []
    passes_on = False
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word in ("$@", "$*", "${@}", "${*}") or word.startswith(("2>", ">", "<")):
            passes_on = passes_on or word in ("$@", "$*", "${@}", "${*}")
            continue
        if not word.startswith("--") or len(word) == 2:
            continue
        name, equals, value = word[2:].partition("=")
        if equals:
            flags.append((name, value))
        elif index < len(words) and not words[index].startswith("-"):
            flags.append((name, words[index]))
            index += 1
        else:
            flags.append((name, None))
    return tuple(flags), passes_on

"""The program to confirm: its command line, its entry point, and which files are its own.

``train.py args`` · ``python [-u] train.py`` · ``[python] -m pkg.mod`` · ``torchrun [opts]
train.py`` · ``python -m torch.distributed.run ...`` · ``accelerate launch [opts] train.py``.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import shutil
import sys

from dtype_lint.errors import UsageError

LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch", "accelerate.commands.launch")
# Python options that take a value: the token after them is not the script.
_PYTHON_VALUE_OPTIONS = ("-W", "-X", "-c")


@dataclasses.dataclass(frozen=True)
class Program:
    command: tuple[str, ...]  # what is executed
    entry: str | None  # absolute path of the user's entry file, when one was found
    module: str | None  # for ``-m pkg.mod``
    launcher: str | None  # "torchrun", "accelerate" or None
    root: str  # the directory whose files count as the program's own

    @property
    def display(self) -> str:
        return " ".join(self.command)


def _is_python(token: str) -> bool:
    name = os.path.basename(token)
    return name.startswith("python") or token == sys.executable


def _first_script(tokens: list[str]) -> int | None:
    for index, token in enumerate(tokens):
        if token.endswith(".py"):
            return index
    return None


def _module_file(module: str, cwd: str) -> str | None:
    """``pkg.mod`` -> its file under ``cwd`` without importing anything."""
    base = os.path.join(cwd, *module.split("."))
    for candidate in (base + ".py", os.path.join(base, "__main__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def _python_target(tokens: list[str], cwd: str) -> tuple[str | None, str | None]:
    """(entry file, module) of ``python``'s arguments (without the interpreter itself)."""
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "-m" and index + 1 < len(tokens):
            module = tokens[index + 1]
            return _module_file(module, cwd), module
        if token.startswith("-m") and len(token) > 2:
            module = token[2:]
            return _module_file(module, cwd), module
        if token in _PYTHON_VALUE_OPTIONS:
            index += 2
            continue
        if token.startswith("-"):
            index += 1
            continue
        return os.path.abspath(os.path.join(cwd, token)), None
    return None, None


def parse_command(argv: list[str], cwd: str | None = None) -> Program:
    """Raises UsageError for a command that cannot be run at all (no script, script missing)."""
    cwd = cwd or os.getcwd()
    tokens = list(argv[1:] if argv[:1] == ["--"] else argv)
    if not tokens:
        raise UsageError("confirm needs a program: dtype-lint confirm train.py [args] or -- torchrun ... train.py")
    head = tokens[0]
    launcher = None
    module = None
    if head.endswith(".py") or (os.path.isfile(os.path.join(cwd, head)) and not shutil.which(head)):
        command = [sys.executable, *tokens]
        entry, module = _python_target(tokens, cwd)
    elif head == "-m":
        command = [sys.executable, *tokens]
        entry, module = _python_target(tokens, cwd)
    elif _is_python(head):
        command = tokens
        rest = tokens[1:]
        if len(rest) >= 2 and rest[0] == "-m" and rest[1] in LAUNCHER_MODULES:
            launcher = "accelerate" if rest[1].startswith("accelerate") else "torchrun"
            script = _first_script(rest[2:])
            entry = os.path.abspath(os.path.join(cwd, rest[2:][script])) if script is not None else None
        else:
            entry, module = _python_target(rest, cwd)
    elif os.path.basename(head) in ("torchrun", "accelerate"):
        launcher = "accelerate" if os.path.basename(head) == "accelerate" else "torchrun"
        if shutil.which(head) is None:
            # Not on PATH: run the same launcher through this interpreter.
            module_name = "torch.distributed.run" if launcher == "torchrun" else "accelerate.commands.launch"
            rest = tokens[2:] if launcher == "accelerate" and tokens[1:2] == ["launch"] else tokens[1:]
            command = [sys.executable, "-m", module_name, *rest]
        else:
            command = tokens
        script = _first_script(tokens[1:])
        entry = os.path.abspath(os.path.join(cwd, tokens[1:][script])) if script is not None else None
    else:
        command = tokens
        script = _first_script(tokens[1:])
        entry = os.path.abspath(os.path.join(cwd, tokens[1:][script])) if script is not None else None
    if entry is None and module is not None:
        raise UsageError(f"cannot find module {module!r} under {cwd}")
    if entry is not None and not os.path.isfile(entry):
        given = next((t for t in tokens if os.path.abspath(os.path.join(cwd, t)) == entry), entry)
        raise UsageError(f"{given}: no such file or directory")
    root = os.path.dirname(entry) if entry else cwd
    if module is not None and entry is not None:
        root = cwd  # a package run with -m: its files live under the working directory
    return Program(tuple(command), entry, module, launcher, root)


def program_files(program: Program) -> list[str]:
    """The entry file and the local modules it imports (transitively), sorted.

    Only files under the program's root count: the static check looks at the user's code, not at
    everything that happens to sit in the same repository.
    """
    if program.entry is None:
        return []
    seen: set[str] = set()
    pending = [program.entry]
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        pending.extend(sorted(_local_imports(path, program.root) - seen))
    return sorted(seen)


def _local_imports(path: str, root: str) -> set[str]:
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return set()
    names: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend((alias.name, 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            names.append((base, node.level))
            names.extend((f"{base}.{alias.name}" if base else alias.name, node.level) for alias in node.names)
    found: set[str] = set()
    here = os.path.dirname(path)
    for name, level in names:
        anchor = root
        if level:
            anchor = here
            for _ in range(level - 1):
                anchor = os.path.dirname(anchor)
        for directory in {anchor, here} if not level else {anchor}:
            base = os.path.join(directory, *name.split(".")) if name else directory
            for candidate in (base + ".py", os.path.join(base, "__init__.py")):
                if os.path.isfile(candidate) and os.path.abspath(candidate).startswith(root + os.sep):
                    found.add(os.path.abspath(candidate))
    return found


def torch_missing(program: Program) -> str | None:
    """The interpreter that will run ``program`` when it cannot find torch (confirm's companion
    needs it), else None. Looks for the module without importing it; a launcher (torchrun,
    accelerate) or an interpreter that cannot be asked is given the benefit of the doubt."""
    import importlib.util
    import subprocess

    interpreter = program.command[0]
    if not _is_python(interpreter):
        return None
    if interpreter == sys.executable:
        try:
            return interpreter if importlib.util.find_spec("torch") is None else None
        except (ImportError, ValueError):
            return interpreter
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
    try:
        result = subprocess.run([interpreter, "-c", probe], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return interpreter if result.returncode == 1 else None

"""What git ignores, read from the ignore files themselves: discovery runs no git process.

``git check-ignore`` in a cloned repository runs what that repository's ``.git/config`` says
(``core.fsmonitor`` is a shell command), so the patterns of gitignore(5) are read and matched
here, as ruff's walker (the ``ignore`` crate) does:

- inside a git work tree only (a ``.git`` directory or file above; a nested repository is a tree
  of its own);
- sources from the weakest: the user's global excludes file (``core.excludesFile`` of
  ``~/.gitconfig``, else ``$XDG_CONFIG_HOME/git/ignore``), ``$GIT_DIR/info/exclude``, then each
  ``.gitignore`` from the top of the tree down to the file's directory; a later pattern beats an
  earlier one, ``!`` re-includes, and nothing inside an ignored directory can be re-included;
- one difference with git: a tracked file a pattern matches is ignored here too (git exempts
  tracked files; ruff does not either).

Ignore files are read as untrusted input: at most ``MAX_IGNORE_FILE`` bytes, never blocking, and a
``.gitignore`` that is a symlink is not followed (git refuses those as well).
"""

from __future__ import annotations

import os
import re

from dtype_lint.tree_files import read_regular_file

MAX_IGNORE_FILE = 1 << 20
_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9",
    "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z", "xdigit": "0-9A-Fa-f",
}


class _Pattern:
    __slots__ = ("regex", "negated", "directory_only", "basename_only")

    def __init__(self, regex: re.Pattern, negated: bool, directory_only: bool, basename_only: bool) -> None:
        self.regex = regex
        self.negated = negated
        self.directory_only = directory_only
        self.basename_only = basename_only


def parse_patterns(text: str) -> list[_Pattern]:
    """The patterns of one ignore file, in order (lines that match nothing are dropped)."""
    patterns = []
    for line in text.removeprefix("\ufeff").split("\n"):
        pattern = _parse_line(line.rstrip("\r"))
        if pattern is not None:
            patterns.append(pattern)
    return patterns


def _parse_line(line: str) -> _Pattern | None:
    if not line or line.startswith("#"):
        return None
    while line.endswith(" ") and not line.endswith("\\ "):  # trailing spaces, unless escaped
        line = line[:-1]
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    directory_only = line.endswith("/")
    line = line.rstrip("/") if directory_only else line
    if not line:
        return None
    basename_only = "/" not in line  # no slash: matches at any depth; a slash anchors it
    regex = _translate(line.removeprefix("/"))
    if regex is None:
        return None
    try:
        compiled = re.compile(regex, re.DOTALL)
    except re.error:  # a range such as [z-a]: git matches nothing with it either
        return None
    return _Pattern(compiled, negated, directory_only, basename_only)


def _translate(glob: str) -> str | None:
    """gitignore's wildmatch (``*`` and ``?`` stop at ``/``; ``**`` spans directories) as a regex;
    None for a pattern git cannot match (an unclosed ``[``, a trailing backslash)."""
    out: list[str] = []
    index, length = 0, len(glob)
    while index < length:
        char = glob[index]
        if char == "*":
            end = index
            while end < length and glob[end] == "*":
                end += 1
            at_start = index == 0 or glob[index - 1] == "/"
            if end - index >= 2 and at_start and (end == length or glob[end] == "/"):
                if end == length:
                    out.append(".*")  # "dir/**": everything inside
                else:
                    out.append("(?:.*/)?")  # "**/": zero or more directories
                    end += 1
            else:
                out.append("[^/]*")
            index = end
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            parsed = _bracket(glob, index)
            if parsed is None:
                return None
            expression, index = parsed
            out.append(expression)
            continue
        elif char == "\\":
            if index + 1 == length:
                return None
            index += 1
            out.append(re.escape(glob[index]))
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _bracket(glob: str, start: int) -> tuple[str, int] | None:
    """``[...]`` at ``start``: its regex and the index after it."""
    index = start + 1
    negated = index < len(glob) and glob[index] in "!^"
    index += negated
    items: list[str] = []
    first = True
    while index < len(glob):
        char = glob[index]
        if char == "]" and not first:
            body = "".join(items)
            return (f"[^/{body}]" if negated else f"(?!/)[{body}]"), index + 1
        first = False
        if glob.startswith("[:", index):
            end = glob.find(":]", index + 2)
            if end != -1:
                named = _POSIX_CLASSES.get(glob[index + 2:end])
                if named is None:
                    return None
                items.append(named)
                index = end + 2
                continue
        if char == "\\" and index + 1 < len(glob):
            index += 1
            char = glob[index]
        if index + 2 < len(glob) and glob[index + 1] == "-" and glob[index + 2] != "]":
            high_index = index + 2
            if glob[high_index] == "\\" and high_index + 1 < len(glob):
                high_index += 1
            items.append(f"{re.escape(char)}-{re.escape(glob[high_index])}")
            index = high_index + 1
            continue
        items.append(re.escape(char))
        index += 1
    return None


class _Source:
    """One ignore file's patterns and the directory they are relative to."""

    __slots__ = ("base", "patterns")

    def __init__(self, base: str, patterns: list[_Pattern]) -> None:
        self.base = base
        self.patterns = patterns


class GitIgnore:
    """``ignored(path, is_dir)`` for any path; ignore files are read once per run."""

    def __init__(self) -> None:
        self._tops: dict[str, str | None] = {}
        self._sources: dict[str, tuple[_Source, ...]] = {}
        self._ignored_dirs: dict[str, bool] = {}
        self._global: list[_Pattern] | None = None

    def ignored(self, path: str, is_dir: bool) -> bool:
        absolute = os.path.abspath(path)
        directory = os.path.dirname(absolute)
        top = self._top(directory)
        if top is None or absolute == top:
            return False
        if is_dir:
            known = self._ignored_dirs.get(absolute)
            if known is None:
                known = self._ignored_dirs[absolute] = self._inside_ignored(directory, top) or self._matches(
                    absolute, directory, True
                )
            return known
        return self._inside_ignored(directory, top) or self._matches(absolute, directory, False)

    def _inside_ignored(self, directory: str, top: str) -> bool:
        return directory != top and self.ignored(directory, True)

    def _matches(self, absolute: str, directory: str, is_dir: bool) -> bool:
        name = os.path.basename(absolute)
        verdict = False
        for source in self._sources_for(directory):
            relative = None
            for pattern in source.patterns:
                if pattern.directory_only and not is_dir:
                    continue
                if pattern.basename_only:
                    subject = name
                else:
                    if relative is None:
                        relative = os.path.relpath(absolute, source.base).replace(os.sep, "/")
                    subject = relative
                if pattern.regex.fullmatch(subject):
                    verdict = not pattern.negated
        return verdict

    # -- where the patterns come from ---------------------------------------------------------
    def _top(self, directory: str) -> str | None:
        """The top of the git work tree holding ``directory`` (None outside any)."""
        walked = []
        current = directory
        while current not in self._tops:
            walked.append(current)
            if os.path.lexists(os.path.join(current, ".git")):
                self._tops[current] = current
                break
            parent = os.path.dirname(current)
            if parent == current:
                self._tops[current] = None
                break
            current = parent
        top = self._tops[current]
        for seen in walked:
            self._tops[seen] = top
        return top

    def _sources_for(self, directory: str) -> tuple[_Source, ...]:
        known = self._sources.get(directory)
        if known is not None:
            return known
        top = self._top(directory)
        if directory == top:
            sources = [_Source(top, self._global_patterns()), _Source(top, _info_exclude(top))]
        else:
            sources = list(self._sources_for(os.path.dirname(directory)))
        own = _read_patterns(os.path.join(directory, ".gitignore"), follow_symlinks=False)
        if own:
            sources.append(_Source(directory, own))
        known = self._sources[directory] = tuple(source for source in sources if source.patterns)
        return known

    def _global_patterns(self) -> list[_Pattern]:
        if self._global is None:
            self._global = _read_patterns(_global_excludes_file())
        return self._global


def _read_patterns(path: str, follow_symlinks: bool = True) -> list[_Pattern]:
    data = read_regular_file(path, MAX_IGNORE_FILE, follow_symlinks=follow_symlinks)
    return parse_patterns(data.decode("utf-8", "surrogateescape")) if data else []


def _info_exclude(top: str) -> list[_Pattern]:
    """``$GIT_DIR/info/exclude`` (a worktree's or submodule's ``.git`` file names its git dir)."""
    git_dir = os.path.join(top, ".git")
    if os.path.isfile(git_dir):
        data = read_regular_file(git_dir, 4096) or b""
        text = data.decode("utf-8", "surrogateescape").strip()
        if not text.startswith("gitdir:"):
            return []
        git_dir = os.path.join(top, text.removeprefix("gitdir:").strip())
        common = read_regular_file(os.path.join(git_dir, "commondir"), 4096)
        if common:
            git_dir = os.path.join(git_dir, common.decode("utf-8", "surrogateescape").strip())
    return _read_patterns(os.path.join(git_dir, "info", "exclude"))


_GLOBAL_FILE: list[str] = []


def _global_excludes_file() -> str:
    """``core.excludesFile`` of the user's own git config, else git's default place (the user's
    files, not the repository's: reading them is reading no repository's settings)."""
    if not _GLOBAL_FILE:
        home = os.path.expanduser("~")
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        configured = None
        for config in (os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")):
            value = _core_excludes_file(config)
            configured = value if value is not None else configured
        path = os.path.expanduser(configured) if configured else os.path.join(xdg, "git", "ignore")
        _GLOBAL_FILE.append(path)
    return _GLOBAL_FILE[0]


_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"[^"]*")?\s*\]\s*(.*)$')
_EXCLUDES = re.compile(r"\s*excludesfile\s*=\s*(.*?)\s*$", re.IGNORECASE)


def _core_excludes_file(config: str) -> str | None:
    """The last ``excludesfile`` of a ``[core]`` section in one git config file (a plain value)."""
    data = read_regular_file(config, MAX_IGNORE_FILE)
    if not data:
        return None
    section, found = "", None
    for line in data.decode("utf-8", "surrogateescape").splitlines():
        header = _SECTION.match(line)
        if header:
            section, line = header.group(1).lower(), header.group(2)
        match = _EXCLUDES.match(line) if section == "core" else None
        if match:
            value = match.group(1).split(" #")[0].split(" ;")[0].strip()
            found = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    return found

"""Running git on a repository that is not trusted: review mode (``check --diff-base``) needs git's
diff; discovery needs no git at all (gitignore.py).

A repository's own ``.git/config`` and ``.gitattributes`` can make git run commands: the
``core.fsmonitor`` hook, hooks (``core.hooksPath``), clean/smudge/process filters, textconv and
external diff drivers, a pager. Every git call here switches each of them off with ``-c``, which
beats every config file, and with the diff options that refuse drivers (``--no-ext-diff
--no-textconv``, set by the caller):

- filters: each configured driver (``filter.<name>.*``, listed first with ``git config``, which
  runs nothing) gets empty ``clean``, ``smudge`` and ``process`` commands and ``required=false``;
- ``GIT_OPTIONAL_LOCKS=0``: git does not write the refreshed index back, so no ``post-index-change``
  hook and no write into the repository;
- submodules are not entered (their config would be another repository's).
"""

from __future__ import annotations

import os
import subprocess

from dtype_lint.errors import UsageError

DISARMED = (
    "core.fsmonitor=false", "core.useBuiltinFSMonitor=false", "core.hooksPath=/dev/null", "core.pager=cat",
    "core.untrackedCache=false", "diff.external=", "submodule.recurse=false", "protocol.allow=never",
    "credential.helper=", "core.askPass=", "core.sshCommand=false", "log.showSignature=false",
)
_ENVIRONMENT = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat"}


def _run(options: list[str], args: list[str], cwd: str, timeout: float) -> subprocess.CompletedProcess:
    environment = {**os.environ, **_ENVIRONMENT}
    environment.pop("GIT_EXTERNAL_DIFF", None)
    try:
        return subprocess.run(["git", "--no-pager", *options, *args], cwd=cwd, capture_output=True,
                              timeout=timeout, env=environment, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        raise UsageError(f"--diff-base needs git: {error}") from None


def _filter_overrides(base: list[str], cwd: str, timeout: float) -> list[str]:
    """``-c`` options that empty every filter driver the repository (or the user) configures."""
    listed = _run(base, ["config", "--null", "--name-only", "--get-regexp", r"^filter\."], cwd, timeout)
    names = set()
    for key in listed.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if key.count(".") >= 2:
            names.add(key[len("filter."): key.rindex(".")])
    options = []
    for name in sorted(names):
        if "=" in name or "\n" in name:  # ``-c`` could not name it
            raise UsageError(f"--diff-base: the repository configures a git filter that cannot be disarmed: {name!r}")
        for setting in ("clean=", "smudge=", "process=", "required=false"):
            options += ["-c", f"filter.{name}.{setting}"]
    return options


_overrides_by_directory: dict[str, list[str]] = {}


def run_git(args: list[str], cwd: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``git ARGS`` in ``cwd`` with every command the repository could configure switched off."""
    base = [option for setting in DISARMED for option in ("-c", setting)]
    key = os.path.realpath(cwd)
    if key not in _overrides_by_directory:
        _overrides_by_directory[key] = base + _filter_overrides(base, cwd, timeout)
    return _run(_overrides_by_directory[key], args, cwd, timeout)

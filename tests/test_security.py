"""A linter run on a cloned repository (issue 24): it never runs the repository's code, never
writes outside the checked tree and its own cache, never believes or hangs on a cache entry, and
never lets the bytes it shows (paths, messages, source) reach a terminal as control sequences.
docs/security.md states these guarantees; each test here fails without the fix it guards."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from dtype_lint import cache_store
from dtype_lint.cache import DIRECTORY_ENV, DIRECTORY_NAME, Cache
from dtype_lint.config import Settings
from dtype_lint.engine import PARSE_ERROR, check_bytes, check_file, check_text
from dtype_lint.project.summary import FORMAT as SUMMARY_FORMAT

# DTL201 is the fixable finding these tests write; its fix is safe for a project on torch 2.3+.
ONLY = ("--select", "DTL001,DTL201", "--target-torch", "2.4")
TRAIN = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
TRAIN_FIXED = 'import torch\n\nscaler = torch.amp.GradScaler("cuda")\n'
GIT_ID = ["-c", "user.name=Security Test", "-c", "user.email=security@example.invalid", "-c", "commit.gpgsign=false"]
# What a terminal would act on: C0 controls but tab and newline, DEL, C1 controls.
CONTROL = {chr(code) for code in (*range(0, 9), *range(11, 32), 127, *range(128, 160))}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *GIT_ID, *args], cwd=repo, check=True, capture_output=True, timeout=60)


def run_bytes(*args: str, cwd: Path, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """The CLI with its output as bytes: what reaches the terminal, undecoded."""
    # Without a cache folder in ``env``, the project's own ``.dtype_lint_cache`` is used.
    full_env = {key: value for key, value in os.environ.items() if key != DIRECTORY_ENV}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "dtype_lint", *args], cwd=cwd, capture_output=True, env=full_env,
                          timeout=timeout)


def no_traceback(result) -> None:
    err = result.stderr if isinstance(result.stderr, str) else result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and result.returncode in (0, 1), err


# -- 1. no code configured by the repository runs --------------------------------------------
def test_no_command_the_repository_configures_runs(tmp_path):
    repo, marks = tmp_path / "repo", tmp_path / "marks"
    repo.mkdir()
    marks.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text(TRAIN)
    (repo / ".gitignore").write_text("generated/\n")
    (repo / "generated").mkdir()
    (repo / "generated" / "out.py").write_text(TRAIN)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    # What a hostile clone can configure: every one of these would touch a file in ``marks``.
    for key, name in (("core.fsmonitor", "fsmonitor"), ("filter.evil.clean", "clean"), ("filter.evil.smudge", "smudge"),
                      ("filter.evil.process", "process"), ("diff.evil.textconv", "textconv"),
                      ("diff.evil.command", "diffdriver"), ("diff.external", "external"), ("core.pager", "pager")):
        git(repo, "config", key, f"touch {marks / name}; cat")
    git(repo, "config", "core.hooksPath", str(repo / "hooks"))
    (repo / "hooks").mkdir()
    for hook in ("post-index-change", "post-checkout", "pre-commit", "reference-transaction", "fsmonitor-watchman"):
        script = repo / "hooks" / hook
        script.write_text(f"#!/bin/sh\ntouch {marks / hook}\n")
        script.chmod(0o755)
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    (repo / "train.py").write_text(TRAIN + "other = torch.cuda.amp.GradScaler()\n")  # a change to diff
    env = {DIRECTORY_ENV: str(tmp_path / "cache")}
    checked = run_cli("check", *ONLY, "--format", "json", ".", cwd=repo, env=env)
    assert checked.returncode == 1, checked.stderr
    # What git ignores is still skipped (read without running git).
    assert {item["path"] for item in json.loads(checked.stdout)} == {"train.py"}
    review = run_cli("check", *ONLY, "--format", "json", "--diff-base", "HEAD", ".", cwd=repo, env=env)
    assert [item["line"] for item in json.loads(review.stdout)] == [4], review.stderr
    fixed = run_cli("fix", *ONLY, ".", cwd=repo, env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert "torch.amp.GradScaler" in (repo / "train.py").read_text()
    assert sorted(os.listdir(marks)) == []


def test_gitignore_is_read_as_git_reads_it(tmp_path):
    """The patterns of gitignore(5), read without git, select what ``git status`` would show."""
    git(tmp_path, "init", "-q")
    files = [
        "a.py", "sub/a.py", "b.py", "c.py", "keep.py", "logs/x.py", "deep/logs/y.py", "src/gen_1.py",
        "src/sub/gen_2.py", "src/ok.py", "build2/z.py", "data/raw/q.py", "data/q.py", "tests/t.py",
        "tests/keep_1.py", "#hash.py", "space .py", "trailing.py", "docs/conf.py", "anch/top.py", "x/anch/top.py",
        "star/a/b/c.py", "w.py", "nested/w.py", "nested/skip/w.py", "ay.py", "xy.py", "Upper.py", "dir.py/in.py",
        "only/file", "lib/deep/m.py",
    ]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text(
        "# a comment\n/a.py\nlogs/\n/src/**/gen_*.py\nbuild?/\ndata/**/q.py\ntests/*.py\n!tests/keep_*.py\n"
        "\\#hash.py\nspace\\ .py\ntrailing.py  \ndocs\n!docs/conf.py\nanch/top.py\nstar/**/c.py\n[bc].py\n!b.py\n"
        "w.py\n[!x]y.py\n[[:upper:]]*.py\ndir.py/\nlib/**\n"
    )
    (tmp_path / "nested" / ".gitignore").write_text("!w.py\nskip/\n")
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("keep.py\n!a.py\n")  # .gitignore files beat it
    listed = run_cli("check", "--show-files", ".", cwd=tmp_path).stdout.splitlines()
    shown = subprocess.run(["git", "-c", "core.quotePath=false", "ls-files", "--others", "--exclude-standard"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout.splitlines()
    expected = sorted(name for name in shown if name.endswith(".py"))
    assert sorted(listed) == expected
    assert len(expected) == 7  # the test means something: most files are ignored, each by another pattern


# -- 2. a cache directory that is a symlink out of the project -------------------------------
def test_a_symlinked_cache_directory_is_never_written_through(tmp_path, monkeypatch):
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "train.py").write_text(TRAIN)
    (project / DIRECTORY_NAME).symlink_to(outside)
    result = run_bytes("check", *ONLY, ".", cwd=project)
    assert result.returncode == 1
    assert os.listdir(outside) == []
    warnings = [line for line in result.stderr.decode().splitlines() if "cache" in line]
    assert len(warnings) == 1 and "symbolic link" in warnings[0], result.stderr
    # Shard folders inside a real cache directory that point elsewhere are not written through either.
    (project / DIRECTORY_NAME).unlink()
    (project / DIRECTORY_NAME).mkdir()
    for index in range(256):
        (project / DIRECTORY_NAME / f"{index:02x}").symlink_to(outside)
    assert run_bytes("check", *ONLY, ".", cwd=project).returncode == 1
    assert os.listdir(outside) == []
    # Nor an analyzer folder (the cache's first level) that does, whatever the run writes or prunes.
    generation = project / DIRECTORY_NAME / Cache(project, Settings()).generation
    shutil.rmtree(generation)
    generation.symlink_to(outside)
    assert run_bytes("check", *ONLY, ".", cwd=project).returncode == 1
    assert os.listdir(outside) == []


# -- 3. symlinks are never followed out of the tree -------------------------------------------
def test_fix_never_follows_a_symlink_out_of_the_tree(tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    victim = outside / "victim.py"
    victim.write_text(TRAIN)
    (outside / "pkg").mkdir()
    (outside / "pkg" / "mod.py").write_text(TRAIN)
    (tree / "link.py").symlink_to(victim)
    (tree / "linked_pkg").symlink_to(outside / "pkg")
    (tree / "real.py").write_text(TRAIN)
    (tree / "inner.py").symlink_to(tree / "real.py")  # inside the tree: the same file, checked once
    env = {DIRECTORY_ENV: str(tmp_path / "cache")}
    assert run_cli("check", "--show-files", ".", cwd=tree, env=env).stdout.split() == ["inner.py"]
    fixed = run_cli("fix", *ONLY, ".", cwd=tree, env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert (tree / "real.py").read_text() == TRAIN_FIXED and (tree / "inner.py").is_symlink()
    assert victim.read_text() == TRAIN and (outside / "pkg" / "mod.py").read_text() == TRAIN
    # Named on the command line, a link out of the tree is refused with a message, and not followed:
    # a DTL001 finding, as every path that cannot be checked is (issue 22).
    named = run_cli("fix", *ONLY, "link.py", cwd=tree, env=env)
    assert named.returncode == 1 and "link.py:1:1: DTL001" in named.stdout and "outside" in named.stdout
    assert victim.read_text() == TRAIN and (tree / "link.py").is_symlink()
    named_directory = run_cli("fix", *ONLY, "linked_pkg", cwd=tree, env=env)
    assert named_directory.returncode == 1
    assert "linked_pkg:1:1: DTL001 Cannot check this file: a symbolic link" in named_directory.stdout
    assert (outside / "pkg" / "mod.py").read_text() == TRAIN


def test_a_file_swapped_for_a_symlink_before_the_write_is_not_written_through(tmp_path, monkeypatch):
    from dtype_lint.fixer import FixOptions, fix_file
    from dtype_lint.fixer import files as files_module

    victim = tmp_path / "victim.py"
    victim.write_text(TRAIN)
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    original = files_module.fix_bytes

    def swap_then_fix(*args, **kwargs):  # an attacker racing the fixer
        result = original(*args, **kwargs)
        read = path.stat()
        os.utime(victim, ns=(read.st_atime_ns, read.st_mtime_ns))  # same size, same time: only the file differs
        path.unlink()
        path.symlink_to(victim)
        return result

    monkeypatch.setattr(files_module, "fix_bytes", swap_then_fix)
    result = fix_file("train.py", str(path), Settings(select=("DTL201",), target_torch="2.4"), FixOptions())
    assert not result.written and result.failure
    assert victim.read_text() == TRAIN


def test_a_baseline_file_is_neither_written_through_a_link_nor_read_from_a_fifo(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's file\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "train.py").write_text(TRAIN)
    (tree / "dtype-lint-baseline.json").symlink_to(outside)
    env = {DIRECTORY_ENV: str(tmp_path / "cache")}
    written = run_cli("check", *ONLY, "--write-baseline", "dtype-lint-baseline.json", ".", cwd=tree, env=env)
    assert written.returncode == 2 and "outside the working directory" in written.stderr
    assert outside.read_text() == "the user's file\n"
    (tree / "pyproject.toml").write_text('[tool.dtype-lint]\nbaseline = "fifo.json"\n')  # the repository's say
    os.mkfifo(tree / "fifo.json")
    read = run_cli("check", *ONLY, ".", cwd=tree, env=env)
    assert read.returncode == 2 and "fifo.json: not a readable regular file" in read.stderr, read.stderr


# -- 4. read-only files and hard links ---------------------------------------------------------
def test_a_read_only_file_is_left_alone_with_a_message(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    path.chmod(0o444)  # the tests run as root, who may write it anyway: the mode bits decide
    result = run_cli("fix", *ONLY, "train.py", cwd=tmp_path, env={DIRECTORY_ENV: str(tmp_path / "cache")})
    assert result.returncode == 1
    assert path.read_text() == TRAIN and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert "train.py: no fix applied: the file is read-only" in result.stderr


def _interpreter_others_may_run() -> str | None:
    """This Python, or the system's of the same version, when every folder above it lets others in."""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for candidate in (os.path.realpath(sys.executable), f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        real = Path(os.path.realpath(candidate))
        if real.is_file() and real.stat().st_mode & 0o001 and all(p.stat().st_mode & 0o001 for p in real.parents):
            return str(real)
    return None


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to run as another user")
def test_another_users_file_is_left_alone(tmp_path):
    """The issue's case: run as another user, in a folder that user may write, on a file (0644,
    root's) that user may not: the rename would succeed, so the mode bits and access decide."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="dtype-lint-other-user-"))
    try:
        folder.chmod(0o777)
        path = folder / "train.py"
        path.write_text(TRAIN)
        path.chmod(0o644)
        python = _interpreter_others_may_run()
        if python is None:
            pytest.skip("no Python of this version that another user may run")
        import site

        env = {**os.environ, "HOME": str(folder), "PYTHONPATH": os.pathsep.join([str(ROOT), *site.getsitepackages()])}
        probe = subprocess.run([python, "-c", "import libcst"], cwd=folder, capture_output=True, timeout=60,
                               user=65534, group=65534, env=env)
        if probe.returncode != 0:  # a venv in a private folder (CI's mktemp -d is 0700)
            pytest.skip("the other user may not read this environment's packages")
        result = subprocess.run(
            [python, "-m", "dtype_lint", "fix", *ONLY, "--no-cache", "train.py"], cwd=folder,
            capture_output=True, text=True, timeout=120, user=65534, group=65534, env=env,
        )
        assert result.returncode == 1, result.stderr
        assert "train.py: no fix applied: the file is not writable by this user (mode 0644)" in result.stderr
        assert path.read_text() == TRAIN and path.stat().st_uid == 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_hard_linked_file_is_refused_and_its_links_kept(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    twin = tmp_path / "twin.txt"
    os.link(path, twin)
    result = run_cli("fix", *ONLY, "train.py", cwd=tmp_path, env={DIRECTORY_ENV: str(tmp_path / "cache")})
    assert result.returncode == 1
    assert os.path.samefile(path, twin) and path.read_text() == TRAIN
    assert "train.py: no fix applied: the file has 2 hard links" in result.stderr


# -- 5, 7, 8. the cache: validated, bounded, never blocking ------------------------------------
def stored_entry(tmp_path: Path, source: str = TRAIN, name: str = "train.py"):
    """A real cache entry for ``source``: (cache, bytes, entry path, entry as JSON)."""
    settings = Settings(select=("DTL001", "DTL201"))
    cache = Cache(tmp_path / "cache", settings)
    data = source.encode()
    cache.store(name, data, check_text(source, name, settings))
    (entry_path,) = (tmp_path / "cache").rglob("*" + cache_store.SUFFIX)
    return cache, data, entry_path, cache_store.decode(entry_path.read_bytes())


def _poison(entry: dict, change) -> dict:
    change(entry)
    return entry


POISONED = {
    "path elsewhere": lambda e: e["findings"][0].update(path="/etc/passwd"),
    "path not a string": lambda e: e["findings"][0].update(path=7),
    "unknown code": lambda e: e["findings"][0].update(code="DTL999"),
    "code and name disagree": lambda e: e["findings"][0].update(name="uncheckable-file"),
    "line past the end": lambda e: e["findings"][0].update(range=[9, 1, 9, 5]),
    "end before start": lambda e: e["findings"][0].update(range=[3, 1, 2, 5]),
    "column zero": lambda e: e["findings"][0].update(range=[3, 0, 3, 5]),
    "bool for a line": lambda e: e["findings"][0].update(range=[True, 1, 3, 5]),
    "range too short": lambda e: e["findings"][0].update(range=[3, 1]),
    "message not text": lambda e: e["findings"][0].update(message=["x"]),
    "cell in a plain file": lambda e: e["findings"][0].update(cell=1),
    "edit past the end": lambda e: e["findings"][0]["fix"]["edits"][0].__setitem__(0, 40),
    "edit content not text": lambda e: e["findings"][0]["fix"]["edits"][0].__setitem__(4, 5),
    "renamed key": lambda e: e.update(kee=e.pop("key")),
    "findings not a list": lambda e: e.update(findings={"0": e["findings"][0]}),
    "extra field": lambda e: e["findings"][0].update(shell="rm -rf /"),
    "summary not a summary": lambda e: e.update(summary={"format": SUMMARY_FORMAT, "classes": []}),
}


@pytest.mark.parametrize("change", list(POISONED.values()), ids=list(POISONED))
def test_a_cache_entry_that_does_not_describe_the_file_is_a_miss(tmp_path, change):
    cache, data, entry_path, entry = stored_entry(tmp_path)
    assert cache.load("train.py", data) is not None
    entry_path.write_bytes(cache_store.encode(_poison(entry, change)))
    assert cache.load("train.py", data) is None


def test_a_poisoned_entry_never_reaches_the_output(tmp_path):
    """Through the CLI: the entry for ``train.py`` is rewritten with its key kept."""
    (tmp_path / "train.py").write_text(TRAIN)
    env = {DIRECTORY_ENV: str(tmp_path / "cache")}
    cold = run_cli("check", *ONLY, "--format", "json", ".", cwd=tmp_path, env=env)
    for entry_path in (tmp_path / "cache").rglob("*" + cache_store.SUFFIX):
        entry = cache_store.decode(entry_path.read_bytes())
        for finding in entry.get("findings", []):
            finding.update(path="/etc/passwd", code="DTL999", range=[9, 1, 9, 2])
        entry_path.write_bytes(cache_store.encode(entry))
    warm = run_cli("check", *ONLY, "--format", "json", ".", cwd=tmp_path, env=env)
    assert warm.stdout == cold.stdout and warm.returncode == 1, warm.stderr


def test_cache_entries_that_block_or_never_end_are_misses(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    for index in range(3):
        (tmp_path / f"m{index}.py").write_text(TRAIN.replace("scaler", f"scaler{index}"))
    env = {DIRECTORY_ENV: str(tmp_path / "cache")}
    cold = run_bytes("check", *ONLY, "--no-project", ".", cwd=tmp_path, env=env)
    entries = sorted((tmp_path / "cache").rglob("*" + cache_store.SUFFIX))
    assert len(entries) == 4
    for entry_path in entries:
        entry_path.unlink()
    os.mkfifo(entries[0])  # opening a FIFO for reading blocks until a writer comes
    entries[1].symlink_to("/dev/zero")  # endless
    with open(entries[2], "wb") as huge:  # sparse: no disk used, but reading it would take a while
        huge.truncate(4 << 30)
    entries[3].symlink_to(tmp_path / "train.py")  # a link to a file that is no entry
    warm = run_bytes("check", *ONLY, "--no-project", ".", cwd=tmp_path, env=env, timeout=60)
    assert warm.stdout == cold.stdout and warm.returncode == 1, warm.stderr


# -- 5, 6. control characters never reach the terminal -----------------------------------------
HOSTILE_NAME = b"title\x1b]0;PWNED\x07\x9b2J.py"
HOSTILE_SOURCE = (
    b'import torch\n\nscaler = ("\x1b[2J", torch.cuda.amp.GradScaler())  # \x1b]0;PWNED\x07 \xc2\x9b31m \xe2\x80\xae\n'
)


@pytest.fixture
def hostile(tmp_path):
    (tmp_path / os.fsdecode(HOSTILE_NAME)).write_bytes(HOSTILE_SOURCE)
    return tmp_path


@pytest.mark.parametrize("output_format", ["text", "concise", "github"])
def test_control_characters_in_paths_and_source_are_escaped(hostile, output_format):
    env = {DIRECTORY_ENV: str(hostile / "cache")}
    result = run_bytes("check", *ONLY, "--format", output_format, ".", cwd=hostile, env=env)
    assert result.returncode == 1, result.stderr
    shown = result.stdout.decode("utf-8")
    assert not CONTROL & set(shown) - {"\n"}, shown
    assert "\u202e" not in shown  # a right-to-left override reorders what follows it
    assert "title\\x1b]0;PWNED\\x07" in shown
    if output_format == "text":  # the source line is shown escaped, the caret under the call
        assert '("\\x1b[2J", torch.cuda.amp.GradScaler())  # \\x1b]0;PWNED\\x07 \\x9b31m \\u202e' in shown
        line, caret = [text for text in shown.splitlines() if "|" in text][1:3]
        assert line.index("torch.cuda") == caret.index("^")


def test_fix_reports_escape_control_characters(hostile):
    env = {DIRECTORY_ENV: str(hostile / "cache")}
    (hostile / "other.py").write_bytes(HOSTILE_SOURCE)
    os.chmod(hostile / "other.py", 0o444)  # a failure message names the file too
    for args in (("fix", "--diff"), ("fix",)):
        result = run_bytes(*args, *ONLY, ".", cwd=hostile, env=env)
        shown = (result.stderr + (b"" if args == ("fix", "--diff") else result.stdout)).decode("utf-8")
        assert not CONTROL & set(shown) - {"\n"}, shown
        assert "title\\x1b]0;PWNED\\x07" in shown


def test_a_diff_is_escaped_on_a_terminal_and_exact_in_a_pipe(hostile):
    import pty

    env = {**os.environ, DIRECTORY_ENV: str(hostile / "cache")}
    command = [sys.executable, "-m", "dtype_lint", "fix", "--diff", *ONLY, "."]
    piped = subprocess.run(command, cwd=hostile, capture_output=True, env=env, timeout=120).stdout
    assert b"\x1b[2J" in piped  # ``git apply`` gets the bytes of the file
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(command, cwd=hostile, stdout=follower, stderr=subprocess.DEVNULL, env=env)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            shown += chunk
        assert process.wait(timeout=120) == 1
    finally:
        os.close(leader)
    text = shown.decode("utf-8").replace("\r\n", "\n")
    assert "+++ b/title\\x1b]0;PWNED\\x07" in text and not CONTROL & set(text) - {"\n"}, text


def test_a_poisoned_message_is_escaped(tmp_path):
    """The cache may be forged, messages included: what it holds is shown escaped."""
    (tmp_path / "train.py").write_text(TRAIN)
    env = {DIRECTORY_ENV: str(tmp_path / "cache")}
    run_bytes("check", *ONLY, ".", cwd=tmp_path, env=env)
    for entry_path in (tmp_path / "cache").rglob("*" + cache_store.SUFFIX):
        entry = cache_store.decode(entry_path.read_bytes())
        for finding in entry.get("findings", []):
            finding["message"] = "\x1b[2J\x1b]0;PWNED\x07cleared"
        entry_path.write_bytes(cache_store.encode(entry))
    shown = run_bytes("check", *ONLY, ".", cwd=tmp_path, env=env).stdout.decode()
    assert "\\x1b[2J\\x1b]0;PWNED\\x07cleared" in shown and "\x1b" not in shown


# -- 13. file names that are not UTF-8 ---------------------------------------------------------
@pytest.mark.parametrize("output_format", ["text", "concise", "json", "github", "sarif", "rdjson"])
def test_a_file_name_that_is_not_utf8_in_every_format(tmp_path, output_format):
    (tmp_path / os.fsdecode(b"caf\xe9.py")).write_text(TRAIN)
    env = {DIRECTORY_ENV: str(tmp_path / "cache")}
    result = run_bytes("check", *ONLY, "--format", output_format, ".", cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    shown = result.stdout.decode("utf-8")
    # Its byte is shown as \xe9 (JSON doubles the backslash; SARIF writes a URI).
    assert any(form in shown for form in ("caf\\xe9.py", "caf\\\\xe9.py", "caf%5Cxe9.py")), shown
    if output_format in ("json", "sarif", "rdjson"):
        json.loads(shown)


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_stdin_filename_that_is_not_utf8(tmp_path, command):
    env = {DIRECTORY_ENV: str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, "-m", "dtype_lint", command, *ONLY, "--format", "sarif", "--stdin-filename", b"caf\xe9.py", "-"],
        input=TRAIN.encode(), cwd=tmp_path, capture_output=True, env={**os.environ, **env}, timeout=120,
    )
    no_traceback(result)
    if command == "check":
        assert b"caf%5Cxe9.py" in result.stdout, result.stdout
    else:  # the fixed source on stdout, the report on stderr
        assert result.stdout == TRAIN_FIXED.encode() and b"Fixed caf\\xe9.py" in result.stderr, result.stderr


def test_fix_on_a_file_name_that_is_not_utf8(tmp_path):
    path = tmp_path / os.fsdecode(b"caf\xe9.py")
    path.write_text(TRAIN)
    env = {DIRECTORY_ENV: str(tmp_path / "cache")}
    diff = run_bytes("fix", "--diff", *ONLY, ".", cwd=tmp_path, env=env)
    assert diff.returncode == 1 and b"+++ b/caf\\xe9.py" in diff.stdout, diff.stderr
    fixed = run_bytes("fix", *ONLY, ".", cwd=tmp_path, env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert b"Fixed caf\\xe9.py" in fixed.stdout and path.read_text() == TRAIN_FIXED


# -- 14. bytes that are not UTF-8 in a comment: CPython compiles the file ------------------------
LATIN1_COMMENT = b"import torch\n# r\xe9glage fin\n\nscaler = torch.cuda.amp.GradScaler()  # \xb5s\n"


def test_a_latin1_byte_in_a_comment_is_checked_as_cpython_compiles_it():
    compile(LATIN1_COMMENT, "latin1.py", "exec")  # CPython takes it: PEP 263's check skips comments
    report = check_bytes(LATIN1_COMMENT, "latin1.py", Settings(select=("DTL001", "DTL201")))
    assert [(f.code, f.line) for f in report.findings] == [("DTL201", 4)]


def test_a_latin1_byte_outside_a_comment_is_still_dtl001():
    data = b'import torch\nname = "r\xe9glage"\n'
    with pytest.raises(SyntaxError):
        compile(data, "latin1.py", "exec")
    report = check_bytes(data, "latin1.py", Settings())
    assert [(f.code, f.line) for f in report.findings] == [(PARSE_ERROR, 2)]


def test_fix_keeps_the_bytes_of_a_latin1_comment(tmp_path):
    from dtype_lint.fixer import FixOptions, fix_file

    path = tmp_path / "latin1.py"
    path.write_bytes(LATIN1_COMMENT)
    result = fix_file("latin1.py", str(path), Settings(select=("DTL201",), target_torch="2.4"), FixOptions())
    assert result.written, result.failure
    assert path.read_bytes() == LATIN1_COMMENT.replace(b"torch.cuda.amp.GradScaler()", b'torch.amp.GradScaler("cuda")')


def test_a_latin1_comment_in_the_text_output_is_escaped(tmp_path):
    (tmp_path / "latin1.py").write_bytes(LATIN1_COMMENT)
    result = run_bytes("check", *ONLY, "latin1.py", cwd=tmp_path, env={DIRECTORY_ENV: str(tmp_path / "cache")})
    assert result.returncode == 1
    shown = result.stdout.decode("utf-8")
    assert "DTL201" in shown and "# \\xb5s" in shown

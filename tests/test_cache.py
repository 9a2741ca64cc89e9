"""The result cache: warm runs give the same findings, and nothing stale or corrupt is served."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from dtype_lint import cache_store
from dtype_lint.cache import DIRECTORY_ENV, Cache, cache_directory
from dtype_lint.config import Settings
from dtype_lint.engine import FileReport, check_file, check_text
from dtype_lint.findings import Confidence, Edit, Finding, Fix, Safety

SOURCE = (
    "import torch\n"
    "scaler = torch.cuda.amp.GradScaler()\n"
    "with torch.cuda.amp.autocast():\n"
    "    loss = model(x)\n"
)
CLEAN = "import torch\nscaler = torch.amp.GradScaler('cuda')\n"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    (tmp_path / "clean.py").write_text(CLEAN)
    sub = tmp_path / "pkg"
    sub.mkdir()
    for index in range(10):  # enough files for the process pool
        (sub / f"m{index}.py").write_text(SOURCE if index % 2 else CLEAN)
    return tmp_path


def check(project: Path, *extra: str):
    """Only DTL201 (and DTL001), so that other rules' findings on these snippets do not matter."""
    cache = project / "cache"
    only = () if "--select" in extra else ("--select", "DTL001,DTL201")
    result = run_cli(
        "check", "--format", "json", *only, *extra, ".", cwd=project, env={DIRECTORY_ENV: str(cache)}
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout), result


def entries(project: Path) -> list[Path]:
    return sorted((project / "cache").rglob("*" + cache_store.SUFFIX))


def read_entry(path: Path) -> dict:
    return cache_store.decode(path.read_bytes())


def write_entry(path: Path, entry: dict) -> None:
    path.write_bytes(cache_store.encode(entry))


def tamper(project: Path, new_message: str) -> None:
    """Rewrite every cached finding's message (keeping the key): only a cache hit can show it."""
    for path in entries(project):
        entry = read_entry(path)
        for finding in entry["findings"]:
            finding["message"] = new_message
        write_entry(path, entry)


def test_warm_run_gives_identical_findings_and_reads_the_cache(project):
    cold, _ = check(project)
    assert cold and {item["code"] for item in cold} == {"DTL201"}
    assert len(entries(project)) == 12
    warm, _ = check(project)
    assert warm == cold
    tamper(project, "served from the cache")
    served, _ = check(project)
    assert {item["message"] for item in served} == {"served from the cache"}
    bypassed, _ = check(project, "--no-cache")
    assert bypassed == cold


def test_no_cache_neither_reads_nor_writes(project):
    check(project, "--no-cache")
    assert not (project / "cache").exists()


def test_corrupt_entries_are_ignored_and_rewritten(project):
    cold, _ = check(project)
    damage = [b"", b"{", b"\x00\xff garbage", b'{"key": 1}', b'{"key": "x", "findings": [{"code": 3}]}', b"[]"]
    paths = entries(project)
    for index, path in enumerate(paths):
        path.write_bytes(damage[index % len(damage)])
    again, result = check(project)
    assert again == cold
    assert result.stderr == ""
    for path in paths:
        entry = read_entry(path)  # rewritten as a whole, valid entry
        assert set(entry) == {"key", "file", "findings", "summary"}


def test_entry_with_matching_key_but_bad_fields_is_a_miss(tmp_path):
    settings = Settings()
    cache = Cache(tmp_path, settings)
    data = SOURCE.encode()
    report = check_text(SOURCE, "a.py", settings)
    cache.store("a.py", data, report)
    (entry_path,) = tmp_path.rglob("*" + cache_store.SUFFIX)
    entry = read_entry(entry_path)
    entry["findings"][0]["confidence"] = 17
    write_entry(entry_path, entry)
    assert cache.load("a.py", data) is None
    entry["findings"] = []
    entry["summary"] = [1, 2]
    write_entry(entry_path, entry)
    assert cache.load("a.py", data) is None


def test_settings_change_invalidates(project):
    check(project)
    tamper(project, "stale")
    for flags in (["--min-confidence", "low"], ["--ignore", "DTL201"], ["--select", "DTL201"]):
        fresh, _ = check(project, *flags)
        assert "stale" not in {item["message"] for item in fresh}, flags
    ignored, _ = check(project, "--ignore", "DTL201")
    assert ignored == []


def test_config_file_change_invalidates(project):
    (project / "pyproject.toml").write_text("[tool.dtype-lint]\nselect = ['DTL001', 'DTL201']\n")
    before, _ = check(project)
    assert before
    (project / "pyproject.toml").write_text(
        "[tool.dtype-lint]\nselect = ['DTL001', 'DTL201']\nper-file-ignores = { 'pkg/*' = ['DTL201'] }\n"
    )
    after, _ = check(project)
    assert after and all(not item["path"].startswith("pkg") for item in after)


def test_content_change_invalidates(project):
    check(project)
    (project / "clean.py").write_text(SOURCE)
    findings, _ = check(project)
    assert any(item["path"] == "clean.py" for item in findings)
    (project / "train.py").write_text(CLEAN)
    findings, _ = check(project)
    assert not any(item["path"] == "train.py" for item in findings)


def test_analyzer_source_change_invalidates(monkeypatch, tmp_path):
    import dtype_lint.cache as cache_module

    settings = Settings()
    first = Cache(tmp_path, settings)
    report = FileReport("a.py", findings=[], lines=None)
    first.store("a.py", b"x = 1\n", report)
    monkeypatch.setattr(cache_module, "_fingerprint", "another analyzer build")
    second = Cache(tmp_path, settings)
    assert second.namespace != first.namespace
    assert second.load("a.py", b"x = 1\n") is None
    assert first.load("a.py", b"x = 1\n") is not None


def test_path_is_part_of_the_key(tmp_path):
    settings = Settings()
    cache = Cache(tmp_path, settings)
    report = check_text(SOURCE, "a.py", settings)
    cache.store("a.py", SOURCE.encode(), report)
    assert cache.load("a.py", SOURCE.encode()) is not None
    assert cache.load("b.py", SOURCE.encode()) is None


def test_round_trip_keeps_every_field(tmp_path):
    """Every field of a finding survives (a notebook's, for ``cell`` and ``file_line``); the lines
    shown with it are the file's own, never stored."""
    from dtype_lint.notebook import load_program

    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}
             for source in ("import torch\n", "a = 1\nb = 2\nc = '\u00e9'\nd = 4\n")]
    raw = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)
    finding = Finding(
        code="DTL201", name="deprecated-amp-api", message="m \u00e9 \n", line=3, column=5, end_line=4,
        end_column=1, confidence=Confidence.MEDIUM, path="dir/a.ipynb", cell=2, file_line=9,
        fix=Fix(Safety.UNSAFE, (Edit(3, 5, 3, 9, "new"), Edit(4, 1, 4, 1, "x\r\n")), "why"),
    )
    report = FileReport("dir/a.ipynb", findings=[finding], lines=load_program(raw).text.split("\n")[:-1])
    cache = Cache(tmp_path, Settings())
    cache.store("dir/a.ipynb", raw.encode(), report)
    loaded = cache.load("dir/a.ipynb", raw.encode())
    assert loaded == report


def test_reports_with_internal_errors_are_not_cached(tmp_path):
    cache = Cache(tmp_path, Settings())
    cache.store("a.py", b"x", FileReport("a.py", findings=[], internal_errors=["a.py: internal error in DTL999"]))
    assert cache.load("a.py", b"x") is None
    assert not list(tmp_path.rglob("*" + cache_store.SUFFIX))


def test_check_file_stores_then_serves(tmp_path):
    source = tmp_path / "a.py"
    source.write_text(SOURCE)
    settings = Settings()
    cache = Cache(tmp_path / "cache", settings)
    first = check_file("a.py", str(source), settings, cache=cache)
    assert cache.load("a.py", source.read_bytes()) == first
    assert check_file("a.py", str(source), settings, cache=cache) == first


def test_unwritable_cache_costs_nothing_but_speed(project):
    blocker = project / "cache"
    blocker.write_text("a file where the cache directory should be")
    findings, result = check(project)
    assert findings and result.stderr == ""


def test_cache_directory_location(tmp_path, monkeypatch):
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert cache_directory(Settings()) == tmp_path / ".dtype_lint_cache"
    configured = Settings(root=str(tmp_path / "proj"), config_path=str(tmp_path / "proj" / "pyproject.toml"))
    assert cache_directory(configured) == tmp_path / "proj" / ".dtype_lint_cache"
    monkeypatch.setenv(DIRECTORY_ENV, str(tmp_path / "elsewhere"))
    assert cache_directory(configured) == tmp_path / "elsewhere"


def test_default_cache_is_self_ignoring(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    result = run_cli("check", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert (tmp_path / ".dtype_lint_cache" / "CACHEDIR.TAG").is_file()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True)
    assert status.stdout.strip() == "?? a.py"


CONCURRENT = """
import json, subprocess, sys
command = [sys.executable, "-m", "dtype_lint", "check", "--format", "json", "--select", "DTL001,DTL201",
           "--jobs", "2", "."]
procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
outs = [p.communicate() for p in procs]
print(json.dumps([[p.returncode, o.decode(), e.decode()] for p, (o, e) in zip(procs, outs)]))
"""


def test_concurrent_runs_share_the_cache_safely(project):
    expected, _ = check(project, "--no-cache")
    for _ in range(2):  # a cold round, where the writers race, then a warm one
        result = subprocess.run(
            [sys.executable, "-c", CONCURRENT], cwd=project, capture_output=True, text=True, timeout=300,
            env={**__import__("os").environ, DIRECTORY_ENV: str(project / "cache"), "PYTHONPATH": str(ROOT)},
        )
        for returncode, out, err in json.loads(result.stdout):
            assert returncode == 1 and err == ""
            assert json.loads(out) == expected
    assert not list((project / "cache").rglob(".tmp-*"))
    for path in entries(project):
        assert set(read_entry(path)) == {"key", "file", "findings", "summary"}


# -- size (issue 22, item 15): compressed, no copy of the source, pruned ---------------------------
def _folder_of(project: Path) -> Path:
    (entry,) = {path.parent for path in entries(project)}
    return entry


def test_entries_are_compressed_and_hold_no_copy_of_the_source(project):
    check(project)
    paths = entries(project)
    assert paths and all("lines" not in read_entry(path) for path in paths)
    plain = sum(len(json.dumps(read_entry(path), separators=(",", ":"))) for path in paths)
    assert sum(path.stat().st_size for path in paths) < plain
    warm = run_cli("check", "--select", "DTL201", ".", cwd=project, env={DIRECTORY_ENV: str(project / "cache")})
    assert "2 | scaler = torch.cuda.amp.GradScaler()" in warm.stdout  # the lines come back from the file


def test_pruning_keeps_current_analyzer_recent_settings_and_present_files(project):
    import os
    import time

    cache = project / "cache"
    old = time.time() - 10 * 24 * 3600
    for index, name in enumerate(("0123456789abcdef", "fedcba9876543210")):  # two older analyzers
        for later, settings in enumerate(("aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb")):
            (cache / name / settings).mkdir(parents=True)
            cache_store.mark_used(str(cache / name), str(cache / name / settings))
            os.utime(cache / name / settings / cache_store.USED_MARKER, (old + later, old + later))
        os.utime(cache / name / cache_store.USED_MARKER, (old + index, old + index))
    (cache / "ab").mkdir()  # the flat layout of format 4
    check(project)
    current = _folder_of(project).parent
    for flags in (["--select", "DTL201"], ["--min-confidence", "low"], ["--ignore", "DTL001"]):
        check(project, *flags)  # four settings in all: the least recent goes
    generations = sorted(p.name for p in cache.iterdir() if p.is_dir())
    assert generations == sorted([current.name, "fedcba9876543210"])  # and the last other one used
    assert [p.name for p in (cache / "fedcba9876543210").iterdir() if p.is_dir()] == ["bbbbbbbbbbbbbbbb"]
    assert len([p for p in current.iterdir() if p.is_dir()]) == cache_store.KEPT_SETTINGS
    # A deleted file's entry goes at the next daily sweep.
    (project / "pkg" / "m1.py").unlink()
    os.utime(current / cache_store.SWEPT_MARKER, (old, old))
    check(project)
    assert not any(read_entry(path)["file"].endswith("m1.py") for path in entries(project))
    assert any(read_entry(path)["file"].endswith("m3.py") for path in entries(project))


def test_a_file_keeps_one_project_pass_entry_whatever_its_worlds(tmp_path):
    (tmp_path / "model.py").write_text(
        "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x.masked_fill(x > 0, -1e9)\n")
    train = tmp_path / "train.py"
    for dtype in ("half", "bfloat16", "half"):
        train.write_text(f"import torch\nfrom model import Net\n\nnet = Net().{dtype}()\n")
        run_cli("check", ".", cwd=tmp_path, env={DIRECTORY_ENV: str(tmp_path / "cache")})
        worlds = [p for p in (tmp_path / "cache").rglob("*" + cache_store.SUFFIX) if "findings" in read_entry(p)
                  and "summary" not in read_entry(p)]
        assert len(worlds) == 1

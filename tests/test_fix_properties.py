"""Properties of ``dtype-lint fix --unsafe-fixes`` over every fixture and over a real tree.

The real tree is the sdist of peft (a pinned release), fetched with ``pip download --no-deps
--no-binary :all:`` into a cache outside the repository and skipped with the reason when it
cannot be fetched. Its config targets transformers 4.56, so DTL601's rename is a fix too.

For each tree, on a copy: fix once with the real CLI; every changed file parses with libcst;
files without fixes keep every byte; a second run changes nothing; and each changed file, given
again with a BOM and CRLF line endings, comes out as the same fix with the same BOM and CRLF, so
bytes outside the edits are kept.
"""

from __future__ import annotations

import codecs
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import libcst as cst
import pytest

from conftest import FIXTURES, TEST_CACHE
from dtype_lint.resolver import SettingsResolver
from dtype_lint.fixer import FixOptions, fix_bytes
from dtype_lint.source import decode

PEFT_VERSION = "0.13.2"
CACHE = TEST_CACHE
TARGET_456 = 'target-transformers = "4.56"\n'


def _python_files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*.py"))}


def _fix(config: Path, *paths: str) -> str:
    """The real CLI; a large real tree takes minutes on a loaded machine, hence the long limit."""
    result = subprocess.run(
        [sys.executable, "-m", "dtype_lint", "fix", "--unsafe-fixes", "--no-cache", "--config", str(config), *paths],
        capture_output=True, text=True, timeout=1800,
    )
    # 2 is a rule's internal error on some file (reported, the file left alone), never a crash.
    assert result.returncode in (0, 1, 2) and "Traceback" not in result.stderr, result.stderr
    return result.stdout


def _crlf_bom(data: bytes) -> bytes:
    return codecs.BOM_UTF8 + data.replace(b"\n", b"\r\n")


def check_fix_properties(tree: Path, tmp_path: Path, config_text: str = "") -> dict[str, int]:
    """Run the properties over a copy of ``tree``; the counts say how much they covered."""
    work = tmp_path / "tree"
    shutil.copytree(tree, work)
    # One explicit config for every run, so the runs below see the same settings.
    config = tmp_path / "dtype-lint.toml"
    config.write_text(config_text)
    before = _python_files(work)
    entries = sorted(work.rglob("*"))
    summary = _fix(config, str(work)).splitlines()[-1]
    after = _python_files(work)
    assert sorted(work.rglob("*")) == entries  # no file created or lost, no temporary left behind
    changed = sorted(name for name in before if after[name] != before[name])
    for name in changed:
        cst.parse_module(decode(after[name]).text)  # every fixed file parses

    # A second run changes nothing. Files the first run left alone are the same input again.
    if changed:
        _fix(config, *[str(work / name) for name in changed])
        assert _python_files(work) == after, "a second fix run changed files"

    # BOM + CRLF variants of the changed files: the same fix, the same bytes around it.
    # Each file's settings as the CLI resolved them: the config, and the versions its project declares.
    resolver = SettingsResolver(str(config))
    variants = 0
    for name in changed:
        if b"\r" in before[name] or before[name].startswith(codecs.BOM_UTF8):
            continue
        settings = resolver(str(work / name))
        result = fix_bytes(_crlf_bom(before[name]), name, settings, FixOptions(unsafe=True, write=False))
        assert result.output == _crlf_bom(after[name]), f"{name}: the CRLF/BOM variant fixed differently"
        variants += 1
    fixes = int(re.match(r"Fixed (\d+) errors?", summary).group(1))
    return {"files": len(before), "changed": len(changed), "fixes": fixes, "variants": variants}


def test_fix_properties_over_every_fixture(tmp_path):
    counts = check_fix_properties(FIXTURES, tmp_path)
    print(f"\nfixtures: {counts}")
    assert counts["changed"] >= 10  # the golden inputs at least: the property is not vacuous
    assert counts["variants"] == counts["changed"]


@pytest.fixture(scope="module")
def peft_tree() -> Path:
    unpacked = CACHE / f"peft-{PEFT_VERSION}"
    if unpacked.is_dir():
        return unpacked
    CACHE.mkdir(parents=True, exist_ok=True)
    sdist = CACHE / f"peft-{PEFT_VERSION}.tar.gz"
    if not sdist.exists():
        try:
            download = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                 f"peft=={PEFT_VERSION}", "-d", str(CACHE)],
                capture_output=True, text=True, timeout=600,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            pytest.skip(f"cannot download the peft {PEFT_VERSION} sdist: {error}")
        if download.returncode != 0 or not sdist.exists():
            reason = (download.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.skip(f"cannot download the peft {PEFT_VERSION} sdist (offline?): {reason}")
    staging = CACHE / f".peft-{PEFT_VERSION}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python >= 3.10.12 / 3.11.4
    with tarfile.open(sdist) as archive:
        archive.extractall(staging, **safe)
    os.replace(staging / f"peft-{PEFT_VERSION}", unpacked)  # complete or absent, never half there
    shutil.rmtree(staging, ignore_errors=True)
    return unpacked


def test_fix_properties_over_the_peft_sdist(peft_tree, tmp_path):
    counts = check_fix_properties(peft_tree, tmp_path, TARGET_456)
    print(f"\npeft {PEFT_VERSION}: {counts}")
    assert counts["files"] >= 100  # the real tree, not an empty download
    assert counts["changed"] >= 1 and counts["variants"] == counts["changed"]


def test_fix_properties_over_the_corpus_sample(tmp_path):
    """Real files from accelerate, diffusers, peft and timm kept in the repository (offline)."""
    sample = Path(__file__).resolve().parent / "data" / "corpus_sample"
    counts = check_fix_properties(sample, tmp_path, TARGET_456)
    print(f"\ncorpus sample: {counts}")
    assert counts["files"] >= 20 and counts["variants"] == counts["changed"]

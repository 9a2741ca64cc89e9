"""Same input, same output: whatever the number of jobs, the cache state or the hash seed.

TorchFix once took "the first element of a set" to resolve names, so its results changed with
PYTHONHASHSEED; each run here is a fresh ``python -m dtype_lint`` process over every fixture.
"""

import json

import pytest

from conftest import ROOT, run_cli
from dtype_lint.cache import DIRECTORY_ENV


def run(tmp_path, *flags: str, seed: str = "0", cache: str | None = None):
    env = {"PYTHONHASHSEED": seed}
    if cache is not None:
        env[DIRECTORY_ENV] = cache
    result = run_cli("check", "--min-confidence", "low", *flags, "fixtures", cwd=ROOT, env=env)
    assert result.returncode == 1, result.stderr[-3000:]
    assert "internal error" not in result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return run(tmp_path_factory.mktemp("ref"), "--format", "json", "--no-cache", "--jobs", "1")


def test_reference_is_meaningful(reference):
    findings = json.loads(reference)
    assert len(findings) > 50
    assert len({item["code"] for item in findings}) > 5


def test_jobs_1_and_2_give_identical_output(reference, tmp_path):
    assert run(tmp_path, "--format", "json", "--no-cache", "--jobs", "2") == reference


@pytest.mark.parametrize("seed", ["1", "123", "4242"])
def test_hash_seed_does_not_change_output(reference, tmp_path, seed):
    assert run(tmp_path, "--format", "json", "--no-cache", "--jobs", "2", seed=seed) == reference


def test_cache_cold_and_warm_give_identical_output(reference, tmp_path):
    cache = str(tmp_path / "cache")
    cold = run(tmp_path, "--format", "json", "--jobs", "2", seed="7", cache=cache)
    assert list((tmp_path / "cache").rglob("*.z"))
    warm = run(tmp_path, "--format", "json", "--jobs", "1", seed="8", cache=cache)
    assert cold == reference and warm == reference


def test_text_output_is_stable_across_seeds_and_jobs(tmp_path):
    first = run(tmp_path, "--format", "text", "--no-cache", "--jobs", "1", seed="1")
    second = run(tmp_path, "--format", "text", "--no-cache", "--jobs", "2", seed="2")
    assert first == second and first.strip()

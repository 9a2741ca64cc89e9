import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# Downloads and tool caches the tests may keep between runs, outside the checkout.
TEST_CACHE = Path(os.environ.get("DTYPE_LINT_TEST_CACHE", Path.home() / ".cache" / "dtype-lint-tests"))

# Hypothesis keeps its files (the charmap it builds once) in the cache above, not in a
# ``.hypothesis`` folder of the checkout that parallel workers would share. Set before hypothesis
# is imported: it reads the variable once.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(TEST_CACHE / "hypothesis"))

# Where the environment forbids writing bytecode (this machine sets PYTHONDONTWRITEBYTECODE),
# every ``python -m dtype_lint`` a test starts would compile the whole package again, a third of
# its start-up: the test processes keep their bytecode in the cache above, outside the checkout.
if os.environ.get("PYTHONDONTWRITEBYTECODE") and "PYTHONPYCACHEPREFIX" not in os.environ:
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = str(TEST_CACHE / "pycache")

from hypothesis import settings as hypothesis_settings  # noqa: E402

# The same examples on every run and machine (CI must not fail on a draw a rerun does not make),
# and no example database: each test's own ``@settings`` bounds how many examples it takes.
hypothesis_settings.register_profile("dtype-lint", database=None, derandomize=True)
hypothesis_settings.load_profile("dtype-lint")

# A run without ``cwd`` would keep its cache (``.dtype_lint_cache``) in the folder pytest was
# started from, the checkout, which parallel workers and later runs would share: each test process
# gets a scratch cache folder of its own instead.
_SCRATCH = Path(tempfile.mkdtemp(prefix="dtype-lint-tests-"))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the options
def pytest_cmdline_main(config):
    """Spread the suite over the machine's cores when pytest-xdist is installed (the ``test``
    extra has it) and the command line says nothing about it: ``-n 0`` or ``-p no:xdist`` run in
    one process. ``loadscope`` sends each test module to one worker as a whole, so an expensive
    module fixture (the confirm runs, the pre-commit environment, the determinism reference) is
    built once, as in a serial run. Without pytest-xdist (an environment made before it joined
    the extra) the suite runs as one process, as before, instead of failing on an unknown ``-n``
    in ``addopts``."""
    option = config.option
    # A worker runs this hook too, with ``-n`` cleared; a pytest that a test starts inherits
    # PYTEST_XDIST_WORKER. Neither may start workers of its own (they would multiply).
    if hasattr(config, "workerinput") or "PYTEST_XDIST_WORKER" in os.environ:
        return
    if not hasattr(option, "numprocesses") or option.numprocesses is not None:
        return
    if option.dist != "no" or getattr(option, "usepdb", False) or option.collectonly:
        return
    option.numprocesses = "auto"
    # Scheduled in the main process alone (``loadgroup`` would need the workers to know).
    option.dist = "loadscope"


def run_cli(*args: str, cwd: str | os.PathLike | None = None, stdin: str | None = None, env: dict | None = None):
    """Run the real ``dtype-lint`` entry point in a subprocess."""
    full_env = dict(os.environ)
    if cwd is None:
        full_env.setdefault("DTYPE_LINT_CACHE_DIR", str(_SCRATCH / "cache"))
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "dtype_lint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
    )


@pytest.fixture
def cli():
    return run_cli

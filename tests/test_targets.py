"""Target versions read from a project's dependency declarations (issue 21), as ruff reads
``requires-python``: each kind of declaration, the nearest directory per package, the lowest bound
among a directory's files, configuration and flags on top, and ``--show-settings`` saying where
each target came from."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import run_cli
from dtype_lint.config import Settings, settings_from_table
from dtype_lint.errors import UsageError
from dtype_lint.targets import declarations_in, project_targets, with_project_targets
from dtype_lint.versions import ceiling, lower_bound, only_before


def _write(root, files: dict[str, str]):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    declarations_in.cache_clear()
    project_targets.cache_clear()
    return root


def _versions(directory) -> dict[str, str | None]:
    return {package: target.version for package, target in project_targets(str(directory)).items()}


@pytest.mark.parametrize("specifier,bound", [
    (">=2.1.0, <2.10.0", "2.1.0"), ("==2.0.0", "2.0.0"), ("~=2.4", "2.4"), ("==2.1.*", "2.1"),
    (">2.3", "2.3"), ("<2.5", None), ("!=2.2", None), ("", None), (">=2.1,>=2.3", "2.3"),
    ("^3.8", "3.8"), ("2.4.0a0+cu121", "2.4.0"),
])
def test_lower_bound_of_a_specifier(specifier, bound):
    assert lower_bound(specifier) == bound


@pytest.mark.parametrize("specifier,newest,before_2_3", [
    ("<2.3", ((2, 3), False), True), ("<=2.2.2", ((2, 2, 2), True), True), ("==2.1.0", ((2, 1, 0), True), True),
    ("==2.1.*", ((2, 2), False), True), ("~=2.1.0", ((2, 2), False), True), ("~=2.1", ((3,), False), False),
    ("^2.1", ((3,), False), False), ("~2.1", ((2, 2), False), True), ("2.1", ((2, 1), True), True),
    (">=1.10", None, False), ("!=2.2", None, False), ("", None, False), (">=1.10, <2.3", ((2, 3), False), True),
    ("<2.4, ==2.1.*", ((2, 2), False), True), ("<=2.3", ((2, 3), True), False), ("<2.3.1", ((2, 3, 1), False), False),
    ("==2.3.0", ((2, 3, 0), True), False),
])
def test_ceiling_of_a_specifier_and_whether_it_admits_only_older_releases(specifier, newest, before_2_3):
    assert ceiling(specifier) == newest
    assert only_before(specifier, (2, 3)) is before_2_3


def _admits(directory) -> str | None:
    return with_project_targets(Settings(), str(directory)).torch_admits


def test_the_torch_a_project_admits_is_read_beside_its_floor(tmp_path):
    """DTL203 asks the newest torch users can install: a floor admits every newer release."""
    _write(tmp_path, {
        "floor/requirements.txt": "torch>=1.13\n",
        "pinned/requirements.txt": "torch==2.1.0\n",
        "capped/pyproject.toml": '[project]\ndependencies = ["torch>=1.13,<2.3"]\n',
        # the newest any declaration of the directory admits: setup.py's floor leaves it open
        "mixed/setup.py": 'from setuptools import setup\nsetup(install_requires=["torch>=1.10"])\n',
        "mixed/requirements.txt": "torch==2.1.2\n",
        "both_capped/requirements.txt": "torch<2.2\n",
        "both_capped/requirements-dev.txt": "torch==2.2.1\n",
        "conda/environment.yml": "dependencies:\n  - pytorch=1.12.1=py3.8_cuda11.3_0\n",
        "bare/requirements.txt": "torch\n",
        "setup_cap/setup.py": 'from setuptools import setup\nsetup(install_requires=["torch<2.3"])\n',
    })
    assert _admits(tmp_path / "floor") == ">=1.13"
    assert _admits(tmp_path / "pinned") == "==2.1.0"
    assert _admits(tmp_path / "capped") == ">=1.13,<2.3"
    assert _admits(tmp_path / "mixed") == ">=1.10"
    assert _admits(tmp_path / "both_capped") == "==2.2.1"
    assert _admits(tmp_path / "conda") == "==1.12.1"
    assert _admits(tmp_path / "bare") == ""
    assert _admits(tmp_path / "setup_cap") == "<2.3"
    assert _admits(tmp_path) is None  # nothing declared
    # a configured target-torch is the torch checked: nothing is read beside it
    configured = settings_from_table({"target-torch": "2.1"}, str(tmp_path / "pyproject.toml"), str(tmp_path))
    assert with_project_targets(configured, str(tmp_path / "floor")).torch_admits is None


def test_pyproject_dependencies_extras_and_requires_python(tmp_path):
    _write(tmp_path, {"pyproject.toml": """\
        [project]
        name = "p"
        requires-python = ">=3.9"
        dependencies = ["torch>=2.1; python_version >= '3.9'", "numpy"]
        [project.optional-dependencies]
        train = ["transformers[torch]>=4.40", "accelerate==1.6.0", "peft"]
        """})
    assert _versions(tmp_path) == {
        "python": "3.9", "torch": "2.1", "transformers": "4.40", "accelerate": "1.6.0", "peft": None,
    }


def test_poetry_dependencies(tmp_path):
    _write(tmp_path, {"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.10"\ntorch = {version = "^2.2"}\n'})
    assert _versions(tmp_path) == {"python": "3.10", "torch": "2.2"}


def test_setup_cfg(tmp_path):
    _write(tmp_path, {"setup.cfg": """\
        [options]
        python_requires = >=3.8
        install_requires =
            torch>=1.13  # the oldest we test
            diffusers>=0.30
        [options.extras_require]
        hf = transformers>=4.30
        """})
    assert _versions(tmp_path) == {"python": "3.8", "torch": "1.13", "diffusers": "0.30", "transformers": "4.30"}


def test_setup_py_is_read_never_run(tmp_path):
    marker = tmp_path / "ran"
    _write(tmp_path, {"setup.py": f"""\
        open({str(marker)!r}, "w").write("setup.py was executed")
        from setuptools import setup
        REQUIRES_PYTHON = ">=3.9.0"
        REQUIRED = ["torch>=2.0.1", "transformers==4.38.0", "tqdm"]
        setup(name="p", python_requires=REQUIRES_PYTHON, install_requires=REQUIRED)
        """})
    assert _versions(tmp_path) == {"python": "3.9.0", "torch": "2.0.1", "transformers": "4.38.0"}
    assert not marker.exists()


def test_requirements_follow_includes_and_the_requirements_folder(tmp_path):
    _write(tmp_path, {
        "requirements.txt": "-r requirements/base.txt\naccelerate>=0.21  # comment\n",
        "requirements/base.txt": "torch >=2.1.0, <2.10.0\n",
        "requirements/dev.txt": "transformers==4.37.2\n",
    })
    assert _versions(tmp_path) == {"torch": "2.1.0", "accelerate": "0.21", "transformers": "4.37.2"}


def test_conda_environment_and_its_pip_list(tmp_path):
    _write(tmp_path, {"environment.yaml": """\
        name: control
        dependencies:
          - python=3.8.5
          - pytorch=1.12.1=py3.8_cuda11.3_cudnn8.3.2_0
          - pip:
              - transformers==4.19.2
        """})
    assert _versions(tmp_path) == {"python": "3.8.5", "torch": "1.12.1", "transformers": "4.19.2"}


def test_the_nearest_directory_decides_each_package_and_the_lowest_bound_of_a_directory_wins(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": '[project]\nrequires-python = ">=3.10"\ndependencies = ["torch>=2.4", "transformers>=4.56"]\n',
        "requirements-dev.txt": "torch==2.6.0\n",
        "pkg/sub/setup.py": 'from setuptools import setup\nsetup(install_requires=["transformers>=4.30", "numpy>=1"])\n',
        "pkg/sub/kernels/setup.py": 'from setuptools import setup\nsetup(install_requires=["ninja"])\n',
    })
    assert _versions(tmp_path / "pkg" / "sub" / "kernels") == {"python": "3.10", "torch": "2.4", "transformers": "4.30"}


def test_config_and_flags_override_the_declarations(tmp_path):
    _write(tmp_path, {"requirements.txt": "torch>=2.1\ntransformers>=4.40\n"})
    configured = settings_from_table({"target-torch": "2.9"}, str(tmp_path / "pyproject.toml"), str(tmp_path))
    settings = with_project_targets(configured, str(tmp_path))
    assert (settings.target_torch, settings.target_transformers) == ("2.9", "4.40")
    assert dict(settings.target_sources)["target-torch"].endswith("[tool.dtype-lint]")
    assert "requirements.txt:2 (transformers>=4.40)" in dict(settings.target_sources)["target-transformers"]


def test_show_settings_names_each_target_and_where_it_came_from(tmp_path):
    _write(tmp_path, {
        "requirements.txt": "torch>=2.1.0\n",
        "pyproject.toml": '[project]\nrequires-python = ">=3.9"\ndependencies = ["transformers"]\n',
        "a.py": "x = 1\n",
    })
    shown = run_cli("check", "--show-settings", "a.py", cwd=tmp_path).stdout.splitlines()
    assert 'target-torch = "2.1.0"  # from requirements.txt:1 (torch>=2.1.0)' in shown
    assert 'target-version = "3.9"  # from pyproject.toml:2 (requires-python = \'>=3.9\')' in shown
    assert any(line.startswith("# target-transformers: not set (pyproject.toml:3") for line in shown), shown
    assert "# target-peft: not set (no lower bound declared)" in shown
    assert '# torch-admits: ">=2.1.0" (from requirements.txt:1 (torch>=2.1.0))' in shown
    flagged = run_cli("check", "--show-settings", "--target-torch", "2.4", "a.py", cwd=tmp_path).stdout
    assert 'target-torch = "2.4"  # from command line' in flagged


def test_ruffs_python_spelling_is_accepted_in_config_and_on_the_command_line(tmp_path):
    table = settings_from_table({"target-version": "py312"}, "pyproject.toml", ".")
    assert table.target_version == "3.12"
    with pytest.raises(UsageError, match="py312"):
        settings_from_table({"target-version": "python3"}, "pyproject.toml", ".")
    _write(tmp_path, {"a.py": "x = 1\n", "pyproject.toml": '[tool.dtype-lint]\ntarget-version = "py311"\n'})
    shown = run_cli("check", "--show-settings", "--target-version", "py310", "a.py", cwd=tmp_path)
    assert 'target-version = "3.10"  # from command line' in shown.stdout
    bad = run_cli("check", "--target-version", "latest", "a.py", cwd=tmp_path)
    assert bad.returncode == 2 and "py312" in bad.stderr


def test_a_project_on_an_old_transformers_is_not_told_to_use_dtype(tmp_path):
    """LLaVA pins transformers==4.37.2: `torch_dtype=` is the spelling that works there (DTL601)."""
    _write(tmp_path, {
        "pyproject.toml": '[project]\ndependencies = ["transformers==4.37.2"]\n',
        "load.py": "import torch\nfrom transformers import AutoModel\n"
                   "m = AutoModel.from_pretrained('x', torch_dtype=torch.float16)\n",
    })
    checked = run_cli("check", "--no-cache", "--format", "json", "--select", "DTL601", "load.py", cwd=tmp_path)
    assert json.loads(checked.stdout) == []
    newer = run_cli("check", "--no-cache", "--format", "json", "--select", "DTL601", "--target-transformers", "4.56",
                    "load.py", cwd=tmp_path)
    assert [f["code"] for f in json.loads(newer.stdout)] == ["DTL601"]


@pytest.mark.parametrize("floor,expected", [("2.1", []), ("2.4", [("DTL201", "safe")]), (None, [("DTL201", "unsafe")])])
def test_dtl201_follows_the_declared_torch(tmp_path, floor, expected):
    """Below the replacement's release: no finding; at or above: a safe fix; unknown: unsafe."""
    files = {"a.py": "import torch\n@torch.cuda.amp.custom_fwd\ndef forward(ctx, x):\n    return x\n"}
    if floor is not None:
        files["requirements.txt"] = f"torch>={floor}\n"
    _write(tmp_path, files)
    checked = run_cli("check", "--no-cache", "--format", "json", "--select", "DTL201", "a.py", cwd=tmp_path)
    assert [(f["code"], f["fix"]["safety"]) for f in json.loads(checked.stdout)] == expected


def test_settings_without_declarations_keep_no_target(tmp_path):
    settings = with_project_targets(Settings(), str(tmp_path))
    assert (settings.target_torch, settings.target_version, settings.target_sources) == (None, None, ())


def test_python_target_from_requires_python_decides_newer_syntax(tmp_path):
    """PEP 695 needs 3.12: a project that declares 3.10 and uses it gets DTL001 (on an older
    interpreter than 3.12; on 3.12+ the syntax parses either way)."""
    import sys

    _write(tmp_path, {"a.py": "type Pair[T] = tuple[T, T]\n", "pyproject.toml": '[project]\nrequires-python = ">=3.12"\n'})
    newer = run_cli("check", "--no-cache", "--format", "json", "a.py", cwd=tmp_path)
    assert json.loads(newer.stdout) == []
    (tmp_path / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.10"\n')
    older = run_cli("check", "--no-cache", "--format", "json", "a.py", cwd=tmp_path)
    codes = [f["code"] for f in json.loads(older.stdout)]
    assert codes == ([] if sys.version_info >= (3, 12) else ["DTL001"])

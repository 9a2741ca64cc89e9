"""Config settings as precision sources: data files (project/data_files.py), config objects of
other modules (project/config_objects.py) and their resolution (facts/config_values.py)."""

import ast
import json
import textwrap

import pytest

from conftest import run_cli
from dtype_lint.discover import discover, discover_data
from dtype_lint.config import Settings
from dtype_lint.project.config_objects import loads_config, module_values
from dtype_lint.project.data_files import MAX_BYTES, read_data_file, yaml_leaves

KOHYA_LIKE = textwrap.dedent(
    """\
    import toml
    from accelerate import Accelerator


    def prepare(config_path):
        config = toml.load(config_path)
        return Accelerator(mixed_precision=config["training"]["mixed_precision"])
    """
)


def _write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return path


def test_yaml_reader_reads_nested_mappings_and_skips_what_it_does_not_read(tmp_path):
    text = textwrap.dedent(
        """\
        # comment
        training:
          fp16: yes           # YAML 1.1 boolean, as yaml.safe_load reads it
          mixed_precision: "bf16"
          devices:
            - 0
            - fp16: true      # inside a sequence: not read
          notes: |
            fp16: true        # inside a block string: not read
        model:
          dtype: bfloat16
          name: llama
        ---
        amp: off
        """
    )
    leaves = {".".join(keys): (value, line) for keys, value, line in yaml_leaves(text)}
    assert leaves["training.fp16"] == (True, 3)
    assert leaves["training.mixed_precision"] == ("bf16", 4)
    assert leaves["model.dtype"] == ("bfloat16", 11)
    assert leaves["amp"] == (False, 14)
    assert "training.devices.fp16" not in leaves and "training.notes.fp16" not in leaves and "fp16" not in leaves


def test_data_files_index_only_precision_settings_by_key_path(tmp_path):
    toml_file = _write(tmp_path, "config.toml", '[training]\nmixed_precision = "bf16"\nlr = 0.1\nshuffle = true\n')
    json_file = _write(tmp_path, "configs/config.json", '{"train": {"fp16_run": true, "seed": 1234, "shuffle": true}}')
    assert read_data_file(str(toml_file), "config.toml") == {"training.mixed_precision": [["bf16", "config.toml:2"]]}
    assert read_data_file(str(json_file), "configs/config.json") == {"train.fp16_run": [[True, "configs/config.json:1"]]}


@pytest.mark.parametrize("name, data", [
    ("bad.json", '{"train": {"fp16": tru'),
    ("bad.toml", "[training\nfp16 = \n"),
    ("bad.yaml", "a:\n\tb: [unclosed\n: : :\n- - -\n"),
    ("binary.json", b"\xff\xfe\x00\x01"),
    ("list.json", "[1, 2, 3]"),
    ("deep.json", "[" * 5000 + "]" * 5000),
])
def test_malformed_data_files_are_skipped_silently(tmp_path, name, data):
    path = _write(tmp_path, name, data)
    assert read_data_file(str(path), name) == {}


def test_a_data_file_over_the_size_limit_is_not_read(tmp_path):
    path = _write(tmp_path, "big.json", json.dumps({"fp16": True, "pad": "x" * MAX_BYTES}))
    assert read_data_file(str(path), "big.json") == {}


def test_module_values_of_namespaces_dicts_and_config_classes():
    tree = ast.parse(textwrap.dedent(
        """\
        from dataclasses import dataclass, field
        from types import SimpleNamespace

        cfg = SimpleNamespace(architecture=SimpleNamespace(backbone_dtype="bfloat16"), seed=3,
                              environment=SimpleNamespace(mixed_precision=True, shuffle=True))
        HP = {"amp": {"enabled": False}, "precision": "16-mixed"}

        @dataclass
        class Options:
            bf16: bool = True
            fp16: bool = field(default=False)
            name: str = "run"
        """
    ))
    assert module_values(tree) == {
        "cfg.architecture.backbone_dtype": ["bfloat16", 4],
        "cfg.environment.mixed_precision": [True, 5],
        "HP.precision": ["16-mixed", 6],
        "Options.bf16": [True, 10],
        "Options.fp16": [False, 11],
    }


def test_loads_config_needs_a_loader_of_a_config_module():
    calls = lambda source: [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]  # noqa: E731
    assert loads_config(calls("import yaml\nc = yaml.safe_load(open(p))\n"), {"yaml": ["yaml"]})
    assert loads_config(calls("from omegaconf import OmegaConf\nc = OmegaConf.load(p)\n"),
                        {"OmegaConf": ["omegaconf.OmegaConf"]})
    assert not loads_config(calls("import pickle\nc = pickle.load(f)\n"), {"pickle": ["pickle"]})


def test_data_files_are_discovered_but_never_checked_as_python(tmp_path):
    _write(tmp_path, "train.py", KOHYA_LIKE)
    _write(tmp_path, "config.toml", '[training]\nmixed_precision = "bf16"\n')
    _write(tmp_path, ".venv/pyvenv.cfg", "")
    _write(tmp_path, ".venv/cfg.yaml", "fp16: true\n")
    assert [d for d, _ in discover([str(tmp_path)], Settings())] == [str(tmp_path / "train.py")]
    assert [d for d, _ in discover_data([str(tmp_path)], Settings())] == [str(tmp_path / "config.toml")]
    # named on the command line, a data file feeds facts and is not parsed as Python
    assert discover([str(tmp_path / "config.toml")], Settings()) == []


# DTL203 speaks to projects whose users run torch < 2.3 (issue 21): these projects admit only
# 2.1 and 2.2 (a floor alone would let users install a torch that emulates bf16).
OLD_TORCH = "torch>=2.1,<2.3\n"


def test_cli_reads_the_config_files_of_the_checked_folder(tmp_path):
    _write(tmp_path, "train.py", KOHYA_LIKE)
    _write(tmp_path, "requirements.txt", OLD_TORCH)
    _write(tmp_path, "config.toml", '[training]\nmixed_precision = "bf16"\n')
    _write(tmp_path, "broken.yaml", "training:\n\tfp16: [\n")
    _write(tmp_path, "bad.json", "{")
    result = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    findings = json.loads(result.stdout)
    assert [(f["path"], f["code"], f["line"]) for f in findings] == [("train.py", "DTL203", 7)]
    assert findings[0]["confidence"] == "medium"
    assert findings[0]["message"].startswith(
        'with `training.mixed_precision = "bf16"` (config.toml:2): `Accelerator(mixed_precision=config["training"]')
    # file-local (as flake8 runs it): no config files, no finding
    local = run_cli("check", "--no-cache", "--no-project", ".", cwd=tmp_path)
    assert local.returncode == 0, local.stdout


def test_a_config_without_the_risky_value_stays_silent(tmp_path):
    _write(tmp_path, "train.py", KOHYA_LIKE)
    _write(tmp_path, "config.toml", '[training]\nmixed_precision = "fp16"\n')
    result = run_cli("check", "--no-cache", ".", cwd=tmp_path)
    assert result.returncode == 0, result.stdout


def test_editing_the_config_file_changes_the_cached_result(tmp_path):
    _write(tmp_path, "train.py", KOHYA_LIKE)
    _write(tmp_path, "requirements.txt", OLD_TORCH)
    config = _write(tmp_path, "config.toml", '[training]\nmixed_precision = "bf16"\n')
    assert run_cli("check", ".", cwd=tmp_path).returncode == 1
    config.write_text('[training]\nmixed_precision = "no"\n')
    assert run_cli("check", ".", cwd=tmp_path).returncode == 0
    config.write_text('[training]\nmixed_precision = "bf16"\n')
    assert run_cli("check", ".", cwd=tmp_path).returncode == 1


def test_flake8_stays_file_local(tmp_path):
    import subprocess
    import sys

    _write(tmp_path, "train.py", KOHYA_LIKE)
    _write(tmp_path, "config.toml", '[training]\nmixed_precision = "bf16"\n')
    result = subprocess.run([sys.executable, "-m", "flake8", "--select=DTL", "train.py"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr


def test_config_class_defaults_reach_training_arguments_across_files(tmp_path):
    _write(tmp_path, "requirements.txt", OLD_TORCH)
    _write(tmp_path, "opts.py", "from dataclasses import dataclass\n\n\n@dataclass\nclass Opts:\n"
                                "    fp16: bool = True\n    bf16: bool = True\n")
    _write(tmp_path, "train.py", "import torch\nfrom transformers import TrainingArguments\n\nfrom opts import Opts\n\n\n"
                                 "def build():\n    o = Opts()\n    return TrainingArguments('out', fp16=o.fp16, bf16=o.bf16)\n\n\n"
                                 "def overridden():\n    o = Opts(bf16=False)\n    return TrainingArguments('out', fp16=o.fp16, bf16=o.bf16)\n")
    result = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    findings = json.loads(result.stdout)
    assert sorted((f["code"], f["line"], f["confidence"]) for f in findings) == [
        ("DTL203", 9, "medium"), ("DTL710", 9, "medium")]
    (both,) = [f for f in findings if f["code"] == "DTL710"]
    assert "`Opts.fp16 = true` (opts.py:6)" in both["message"] and "`Opts.bf16 = true` (opts.py:7)" in both["message"]

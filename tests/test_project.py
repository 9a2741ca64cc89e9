"""The project pass: files checked as one program (dtype_lint/project/).

Fixture folders under fixtures/project/ are checked as projects; their files mark what the
whole-program analysis adds with ``# expect-project: DTLxxx`` (file-local findings keep
``# expect:``, which tests/test_fixtures.py checks file by file).
"""

import posixpath
import re
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from dtype_lint import engine
from dtype_lint.cache import Cache
from dtype_lint.config import Settings
from dtype_lint.resolver import SettingsResolver
from dtype_lint.discover import discover_data
from dtype_lint.findings import Confidence
from dtype_lint.project import recheck
from dtype_lint.project.summary import summarize_tree
from dtype_lint.project.worlds import Project, module_names

PROJECTS = FIXTURES / "project"
BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "realbugs" / "cases"
FOLDERS = sorted(p for p in PROJECTS.iterdir() if p.is_dir())
MARK = re.compile(r"#\s*expect(?:-project)?:\s*(?P<codes>DTL\d{3}(?:\s*,\s*DTL\d{3})*)")


def _files(folder: Path) -> list[tuple[str, str]]:
    return [(p.relative_to(folder).as_posix(), str(p)) for p in sorted(folder.rglob("*.py"))]


def _data(folder: Path) -> list[tuple[str, str]]:
    """The folder's config data files, as the CLI finds them (dtype_lint/project/data_files.py)."""
    return [(posixpath.relpath(fs_path, folder), fs_path) for _, fs_path in discover_data([str(folder)], Settings())]


def _expected(folder: Path) -> set[tuple[str, str, int]]:
    found = set()
    for display, fs_path in _files(folder):
        for number, line in enumerate(Path(fs_path).read_text().splitlines(), start=1):
            match = MARK.search(line)
            if match:
                found |= {(display, code, number) for code in re.split(r"\s*,\s*", match.group("codes"))}
    return found


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_project_fixture_findings_match_expectations(folder):
    # Each file's settings as a user's run resolves them: the versions its project declares too.
    reports = engine.check_files(_files(folder), Settings(), jobs=1, project=True, data=_data(folder),
                                 settings_for=SettingsResolver())
    assert not [e for r in reports for e in r.internal_errors]
    actual = {(r.path, f.code, f.line) for r in reports for f in r.findings}
    assert sorted(actual) == sorted(_expected(folder)), [f.message for r in reports for f in r.findings]


def test_world_message_names_the_class_the_condition_and_the_cast():
    folder = PROJECTS / "half_decoder_package"
    reports = engine.check_files(_files(folder), Settings(), jobs=1, project=True)
    (finding,) = [f for r in reports for f in r.findings if f.code == "DTL501"]
    assert finding.message.startswith(
        "`ScaledAttention.forward` runs in float16 when `options.half` is true "
        "(run.py:11, `model.to(torch.float16)`, through `Decoder`): "
    )
    # a flag's branch is a reachable configuration: medium, never high
    assert finding.confidence.name == "MEDIUM"


def test_unconditional_cast_keeps_the_rule_confidence():
    folder = PROJECTS / "factory_in_half_world"
    reports = engine.check_files(_files(folder), Settings(), jobs=1, project=True)
    (finding,) = [f for r in reports for f in r.findings]
    assert finding.confidence.name == "HIGH" and "(main.py:5, `RelativeBias(8).half()`)" in finding.message


def test_file_by_file_check_does_not_join_files():
    folder = PROJECTS / "half_decoder_package"
    reports = engine.check_files(_files(folder), Settings(), jobs=1, project=False)
    assert [f for r in reports for f in r.findings] == []


def test_cli_checks_the_paths_as_one_program(tmp_path):
    shutil.copytree(PROJECTS / "half_decoder_package", tmp_path / "p")
    result = run_cli("check", "--no-cache", "--format", "concise", ".", cwd=tmp_path / "p")
    assert result.returncode == 1, result.stderr
    assert "net/layers.py:16:37: DTL501 `ScaledAttention.forward` runs in float16" in result.stdout


# -- the cache: a file is re-analysed when it or a file its worlds come from changes ----------
def test_editing_one_file_reanalyses_it_and_its_dependents(tmp_path, monkeypatch):
    project = tmp_path / "p"
    shutil.copytree(PROJECTS / "half_decoder_package", project)
    files = _files(project)
    settings = Settings()
    checked: list[str] = []
    rechecked: list[str] = []
    plain_check, world_check = engine.check_bytes, engine.check_text

    def count_plain(data, path, *args, **kwargs):
        checked.append(path)
        return plain_check(data, path, *args, **kwargs)

    def count_worlds(text, path, *args, **kwargs):
        if kwargs.get("worlds") is not None:
            rechecked.append(path)
        return world_check(text, path, *args, **kwargs)

    monkeypatch.setattr(engine, "check_bytes", count_plain)
    monkeypatch.setattr(engine, "check_text", count_worlds)

    def run():
        checked.clear()
        rechecked.clear()
        cache = Cache(tmp_path / "cache", settings)
        reports = engine.check_files(files, settings, jobs=1, cache=cache, project=True)
        return {(r.path, f.code, f.line) for r in reports for f in r.findings}

    cold = run()
    assert ("net/layers.py", "DTL501", 16) in cold
    assert sorted(checked) == sorted(d for d, _ in files)
    assert rechecked == ["net/layers.py", "net/model.py"]  # the files whose classes have worlds
    assert run() == cold and checked == [] and rechecked == []  # warm: nothing analysed again
    # run.py no longer casts: run.py is analysed again, and layers.py, whose worlds came from it
    run_py = project / "run.py"
    run_py.write_text(run_py.read_text().replace("model = model.to(torch.float16)", "model = model.float()"))
    assert run() == set()
    assert checked == ["run.py"] and rechecked == []
    # the cast is back: layers.py is checked under its world again (served from the cache)
    run_py.write_text(run_py.read_text().replace("model = model.float()", "model = model.to(torch.float16)"))
    assert run() == cold and checked == ["run.py"] and rechecked == []


# -- the summaries and the name resolution ---------------------------------------------------
def test_module_names_are_every_suffix_of_the_path():
    assert module_names("src/pkg/model.py") == ["src.pkg.model", "pkg.model", "model"]
    assert module_names("pkg/__init__.py") == ["pkg"]
    assert module_names("my-scripts/train.py") == ["train"]


def _summaries(sources: dict[str, str]) -> dict[str, dict]:
    import ast

    return {path: summarize_tree(ast.parse(text), text) for path, text in sources.items()}


def test_imports_resolve_relative_aliased_and_through_reexports():
    summaries = _summaries({
        "pkg/__init__.py": "from .layers import Block\n",
        "pkg/layers.py": "import torch.nn as nn\nclass Block(nn.Module):\n    pass\n",
        "pkg/model.py": "from . import layers\nfrom .layers import Block as B\n",
        "train.py": "import pkg.model as m\nimport pkg\nfrom pkg.layers import Block\n",
    })
    project = Project(summaries)
    block = (("class", "pkg/layers.py", "Block"),)
    assert project.resolve("pkg/model.py", "B") == block
    assert project.resolve("pkg/model.py", "layers.Block") == block
    assert project.resolve("train.py", "pkg.Block") == block  # re-exported by the package
    assert project.resolve("train.py", "m.B") == block
    assert project.resolve("train.py", "torch.nn.Linear") == ()  # not a checked file


def test_worlds_follow_function_returns_containment_and_conditions():
    summaries = _summaries({
        "model.py": (
            "import torch.nn as nn\nclass Inner(nn.Module):\n    pass\n"
            "class Outer(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.inner = Inner()\n"
            "def build():\n    return Outer()\n"
        ),
        "main.py": (
            "import torch\nfrom model import build\n"
            "def run(args):\n    net = build()\n    if args.bf16:\n        net = net.to(torch.bfloat16)\n"
        ),
    })
    worlds = Project(summaries).worlds()
    (outer,) = worlds[("model.py", "Outer")]
    (inner,) = worlds[("model.py", "Inner")]
    assert (outer.dtype, outer.conditional, outer.condition, outer.path, outer.line) == (
        "bf16", True, "args.bf16", "main.py", 6)
    assert inner.via == "Outer" and inner.line == 6


def test_world_rules_are_registered_codes():
    from dtype_lint.rules import all_rules

    codes = {rule.code for rule in all_rules()}
    assert recheck.WORLD_RULES <= codes and recheck.TRAINING_RULES <= codes


def test_constructor_dtype_from_a_caller_in_another_file():
    folder = PROJECTS / "ctor_dtype_argument"
    reports = engine.check_files(_files(folder), Settings(), jobs=1, project=True)
    (finding,) = [f for r in reports for f in r.findings]
    assert finding.message.startswith(
        "`Whitener` gets `dtype` float16 (features.py:7, `Whitener(features.shape[1], dtype=torch.float16)`) "
        "from a caller: `torch.linalg.inv`"
    )
    assert finding.confidence.name == "MEDIUM"  # other callers may build it in float32


# -- checkpoint dtypes across files (project/checkpoints.py) -----------------------------------
def _summary(text: str) -> dict:
    import ast

    return summarize_tree(ast.parse(text), text)


def test_summary_records_the_low_precision_entries_a_save_writes():
    saves = _summary(
        "import torch\nfrom copy import deepcopy\n"
        "def save(model, opt, sd, path):\n"
        "    ckpt = {'epoch': 1, 'model': deepcopy(model).half(), 'anchors': opt.anchors.half(), 'opt': opt.state_dict()}\n"
        "    torch.save(ckpt, path)\n"
        "    torch.save({k: v.to(torch.bfloat16) for k, v in sd.items() if 'lora_' in k}, path)\n"
        "    torch.save({k: v for k, v in sd.items()}, path)\n"
        "    model.half()\n"
        "    torch.save(model.state_dict(), path)\n"
    )["saves"]
    got = sorted((s["kind"], s["key"], tuple(s["filters"]), s["dtype"], s["line"]) for s in saves)
    assert got == [
        ("module", "model", (), "fp16", 4),
        ("state", None, (), "fp16", 8),
        ("state", None, ("lora_",), "bf16", 6),
        ("tensor", "anchors", (), "fp16", 4),
    ]


def test_summary_records_no_save_of_float32_values():
    assert _summary("import torch\ndef save(m, p):\n    torch.save({'model': m.float(), 'sd': m.state_dict()}, p)\n")["saves"] == []
    halved_and_restored = "import torch\ndef save(m, p):\n    m.half()\n    m.float()\n    torch.save(m.state_dict(), p)\n"
    assert _summary(halved_and_restored)["saves"] == []
    assert len(_summary(halved_and_restored.replace("    m.float()\n", ""))["saves"]) == 1


def _check_project(tmp_path, files: dict, project: bool = True):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    listed = [(name, str(tmp_path / name)) for name in sorted(files)]
    reports = engine.check_files(listed, Settings(), jobs=1, project=project)
    assert not [e for r in reports for e in r.internal_errors]
    return [f for r in reports for f in r.findings]


HALF_SAVE = "import torch\ndef save(model, path):\n    torch.save({'model': model.half(), 'step': 3}, path)\n"


def test_loaded_half_module_is_matched_by_key_at_medium_confidence(tmp_path):
    (finding,) = _check_project(tmp_path, {"save.py": HALF_SAVE, "run.py": (
        "import torch\ndef run(path, x):\n    net = torch.load(path)['model']\n    return net(x.float())\n")})
    assert finding.code == "DTL101" and finding.path == "run.py" and finding.line == 4
    assert "the checkpoint saved at save.py:3 under `\"model\"` as float16 (`model.half()`)" in finding.message
    assert finding.confidence.name == "MEDIUM"


def test_another_key_or_a_file_by_file_check_is_not_a_match(tmp_path):
    run = "import torch\ndef run(path, x):\n    net = torch.load(path)['weights']\n    return net(x.float())\n"
    assert _check_project(tmp_path, {"save.py": HALF_SAVE, "run.py": run}) == []
    same_key = run.replace("'weights'", "'model'")
    assert _check_project(tmp_path, {"save.py": HALF_SAVE, "run.py": same_key}, project=False) == []


def test_half_state_tensor_into_a_half_module_is_clean(tmp_path):
    save = "import torch\ndef save(sd):\n    torch.save({k: v.half() for k, v in sd.items()}, 'half_sd.pt')\n"
    load = ("import torch\ndef load(layer, run_dir):\n    sd = torch.load(f'{run_dir}/half_sd.pt')\n    layer.half()\n"
            "    layer.weight.data = sd['layer.weight']\n")
    assert _check_project(tmp_path, {"save.py": save, "load.py": load}) == []
    flagged = _check_project(tmp_path, {"save.py": save, "load.py": load.replace("    layer.half()\n", "")})
    assert [(f.code, f.line) for f in flagged] == [("DTL602", 4)]


# A state dict saved whole (no key, no filter) holds any key: only its path ties a load to it.
# diffusers' convert_ncsnpp_original_checkpoint_to_diffusers.py loads `args.checkpoint_path` and
# was matched to another program's `torch.save(discriminator.state_dict(), ...)` (40 findings).
KEYLESS_SAVE = ("import os\nimport torch\ndef save(disc, args):\n    disc.to(dtype=torch.float16)\n"
                "    torch.save(disc.state_dict(), os.path.join(args.output_dir, 'pytorch_model.bin'))\n")
KEYLESS_LOAD = ("import torch\nfrom torch import nn\ndef convert(args):\n    sd = torch.load(PATH, map_location='cpu')\n"
                "    layer = nn.Linear(4, 4)\n    layer.weight.data = sd['all_modules.0.weight'].data\n")


@pytest.mark.parametrize("path", ["args.checkpoint_path", "'original/ncsnpp.pth'", "ckpt"])
def test_keyless_state_dict_save_is_no_match_for_a_load_of_another_path(tmp_path, path):
    assert _check_project(tmp_path, {"save.py": KEYLESS_SAVE, "convert.py": KEYLESS_LOAD.replace("PATH", path)}) == []


@pytest.mark.parametrize("path", ["os.path.join(args.output_dir, 'pytorch_model.bin')", "'out/pytorch_model.bin'"])
def test_keyless_state_dict_save_matches_a_load_of_its_path(tmp_path, path):
    load = "import os\n" + KEYLESS_LOAD.replace("PATH", path)
    flagged = _check_project(tmp_path, {"save.py": KEYLESS_SAVE, "convert.py": load})
    assert [(f.code, f.line) for f in flagged] == [("DTL602", 7)]


# -- helpers of other files that cast the model they are given (project/helpers.py) ------------
EVALUATOR = ("import torch\nclass Evaluator:\n    def evaluate(self, model, half=False):\n        if half:\n"
             "            model = model.half()\n        return model(torch.zeros(1, dtype=torch.float16))\n")
TRAINER = ("import torch\nfrom evaluator import Evaluator\n"
           "def train(model, loader, fp16):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
           "    ev = Evaluator()\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n"
           "        ev.evaluate(model, half=HALF)\n")


def test_evaluator_of_another_file_halving_the_trained_model_is_reported_at_the_step(tmp_path):
    at_cast, finding = _check_project(tmp_path, {"evaluator.py": EVALUATOR, "trainer.py": TRAINER.replace("HALF", "fp16")})
    assert (finding.code, finding.path, finding.line) == ("DTL405", "trainer.py", 8)
    # and in the helper's file, at the cast the fix changes
    assert (at_cast.code, at_cast.path, at_cast.line) == ("DTL405", "evaluator.py", 5)
    assert "trainer.py:8 goes on training" in at_cast.message
    assert "`Evaluator.evaluate` (evaluator.py:5, `model.half()`)" in finding.message
    assert "when `half` is true (line 9 passes `fp16`)" in finding.message


def test_evaluator_flag_passed_false_or_a_copy_passed_is_clean(tmp_path):
    assert _check_project(tmp_path, {"evaluator.py": EVALUATOR, "trainer.py": TRAINER.replace("HALF", "False")}) == []
    copied = TRAINER.replace("HALF", "fp16").replace("ev.evaluate(model,", "ev.evaluate(copy.deepcopy(model),")
    assert _check_project(tmp_path, {"evaluator.py": EVALUATOR, "trainer.py": "import copy\n" + copied}) == []


def test_checkpoint_entry_read_with_get_is_matched_too(tmp_path):
    run = "import torch\ndef run(path, x):\n    net = torch.load(path).get('model')\n    return net(x.float())\n"
    (finding,) = _check_project(tmp_path, {"save.py": HALF_SAVE, "run.py": run})
    assert (finding.code, finding.line) == ("DTL101", 4)


def test_evaluator_flag_left_out_follows_its_default(tmp_path):
    left_out = TRAINER.replace(", half=HALF", "")
    assert _check_project(tmp_path, {"evaluator.py": EVALUATOR, "trainer.py": left_out}) == []
    on_by_default = EVALUATOR.replace("half=False", "half=True")
    _, finding = _check_project(tmp_path, {"evaluator.py": on_by_default, "trainer.py": left_out})
    assert (finding.code, finding.line) == ("DTL405", 8)


def test_helper_casting_to_the_dtype_its_caller_passes(tmp_path):
    helper = "def sample(net, dtype, z):\n    net.to(dtype)\n    return net(z)\n"
    loop = ("import torch\nfrom sampling import sample\n"
            "def train(net, loader, z):\n    opt = torch.optim.Adam(net.parameters())\n    for x in loader:\n"
            "        net(x).mean().backward()\n        opt.step()\n        sample(net, DTYPE, z)\n")
    at_cast, finding = _check_project(tmp_path, {"sampling.py": helper, "train.py": loop.replace("DTYPE", "torch.bfloat16")})
    assert (at_cast.path, at_cast.line) == ("sampling.py", 2)
    assert (finding.code, finding.line) == ("DTL405", 7) and "casts it to bfloat16 in place" in finding.message
    assert _check_project(tmp_path, {"sampling.py": helper, "train.py": loop.replace("DTYPE", "torch.float32")}) == []


def test_the_other_arm_of_a_choice_is_no_restore_but_a_later_float_is():
    ternary = "def run(model, half=True):\n    model.half() if half else model.float()\n    return model(1)\n"
    assert "restored" not in _summary(ternary)["functions"]["run"]
    branches = "def run(model, half):\n    if half:\n        model.half()\n    else:\n        model.float()\n    return 1\n"
    assert "restored" not in _summary(branches)["functions"]["run"]
    later = ternary.replace("    return model(1)\n", "    out = model(1)\n    model.float()\n    return out\n")
    assert _summary(later)["functions"]["run"]["restored"] == ["model"]


def test_helper_with_its_own_precision_switch_reported_in_both_files(tmp_path):
    files = {p.name: p.read_text() for p in (PROJECTS / "evalflip_local_half_flag").glob("*.py")}
    found = sorted((f.path, f.line) for f in _check_project(tmp_path, files))
    assert found == [("evaluation.py", 14), ("train.py", 13)]
    switched_off = files["evaluation.py"].replace('half = device.type != "cpu" and torch.cuda.device_count() == 1',
                                                  "half = False")
    assert _check_project(tmp_path, {**files, "evaluation.py": switched_off}) == []


def test_helper_rebinding_its_parameter_before_the_cast_is_not_the_callers_model(tmp_path):
    helper = ("import torch\ndef evaluate(model, path):\n    model = torch.load(path)\n    half = True\n"
              "    if half:\n        model.half()\n    return model\n")
    loop = ("import torch\nfrom evaluation import evaluate\ndef train(net, loader):\n"
            "    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n    for x in loader:\n"
            "        net(x).sum().backward()\n        opt.step()\n        evaluate(net, 'best.pt')\n")
    assert _check_project(tmp_path, {"evaluation.py": helper, "train.py": loop}) == []


@pytest.mark.parametrize("rebinding", ["model = model.eval()", "model = model.to('cuda').eval()",
                                       "model = model.train(False)"])
def test_helper_rebinding_its_parameter_to_the_module_itself_is_still_the_callers_model(tmp_path, rebinding):
    # a module's ``eval()``/``to()``/``train()`` return the module: the later ``half()`` casts the caller's
    helper = (f"import torch\ndef evaluate(model, half=False):\n    {rebinding}\n"
              "    if half:\n        model.half()\n    return model(1)\n")
    loop = ("import torch\nfrom evaluation import evaluate\ndef train(net, loader, fp16):\n"
            "    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n    for x in loader:\n"
            "        net(x).sum().backward()\n        opt.step()\n        evaluate(net, half=fp16)\n")
    found = _check_project(tmp_path, {"evaluation.py": helper, "train.py": loop})
    assert sorted((f.path, f.code, f.line) for f in found) == [("evaluation.py", "DTL405", 5), ("train.py", "DTL405", 7)]
    copied = helper.replace(rebinding, "model = copy.deepcopy(model).eval()").replace("import torch", "import copy, torch")
    assert _check_project(tmp_path, {"evaluation.py": copied, "train.py": loop}) == []


def test_an_import_means_the_module_beside_the_script_not_one_of_the_same_name_elsewhere(tmp_path):
    restoring = "def run(model, half=True):\n    model.half() if half else model.float()\n    out = model(1)\n    model.float()\n    return out\n"
    leaving = "def run(model, half=True):\n    model.half() if half else model.float()\n    return model(1)\n"
    loop = ("import torch\nimport val as validate\ndef train(net, loader):\n"
            "    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n    for x in loader:\n"
            "        net(x).sum().backward()\n        opt.step()\n        validate.run(net)\n")
    (tmp_path / "classify").mkdir()
    assert _check_project(tmp_path, {"val.py": restoring, "classify/val.py": leaving, "train.py": loop}) == []
    found = _check_project(tmp_path, {"val.py": leaving, "classify/val.py": restoring, "train.py": loop})
    assert sorted((f.path, f.line) for f in found) == [("train.py", 7), ("val.py", 2)]


# -- frameworks that cast the models handed to them (project/handoffs.py) -------------------
def _folder_worlds(name: str) -> dict:
    files = dict(_files(PROJECTS / name))
    summaries = _summaries({path: Path(fs_path).read_text() for path, fs_path in files.items()})
    return Project(summaries, files).worlds()


@pytest.mark.parametrize("folder, cls, dtype, trains, methods", [
    ("deepspeed_config_constant", ("nets/ranker.py", "PairRanker"), "fp16", False, ()),
    ("deepspeed_json_fp16", ("spectral.py", "SpectralHead"), "fp16", False, ()),
    ("deepspeed_bf16_fits", ("ds_setup.py", "MaskedScorer"), "bf16", False, ()),
    ("lightning_true_half", ("module.py", "Denoiser"), "fp16", True, ()),
    ("lightning_bf16_true_clean", ("module.py", "TagClassifier"), "bf16", True, ()),
    ("generate_bf16_fits", ("processors.py", "BanTokens"), "bf16", False, ("__call__",)),
    ("generate_half_chain", ("force.py", "ForceToken"), "fp16", False, ("__call__",)),
    ("self_halving_flag_eps_ok", ("nets.py", "Upscaler"), "fp16", False, ()),
])
def test_framework_settings_seed_worlds(folder, cls, dtype, trains, methods):
    # the clean folders are silent because the dtype fits, not because no world was found
    worlds = _folder_worlds(folder)[cls]
    assert {w.dtype for w in worlds} == {dtype}
    assert all(w.conditional for w in worlds)  # a framework setting: a reachable configuration
    assert {w.trains for w in worlds} == {trains} and {w.methods for w in worlds} == {methods}


@pytest.mark.parametrize("folder, cls", [
    ("deepspeed_bf16_fits", ("ds_setup.py", "AutoScorer")),  # "enabled": "auto" is not float16
    ("lightning_bf16_true_clean", ("module.py", "MixedTagClassifier")),  # "16-mixed" keeps float32 weights
    ("accelerate_prepare_keeps_fp32", ("model.py", "Scorer")),  # prepare() only autocasts
])
def test_framework_settings_that_do_not_cast_make_no_world(folder, cls):
    assert cls not in _folder_worlds(folder)


@pytest.mark.parametrize("folder, code, start", [
    ("deepspeed_config_constant", "DTL501",
     "`PairRanker.forward` runs in float16 under the DeepSpeed config `\"fp16\": {\"enabled\": True}` of "
     "settings.py:3 (launch.py:9, `deepspeed.initialize(args=args, model=ranker, optimizer=r...`): "),
    ("deepspeed_json_fp16", "DTL509",
     "`SpectralHead.forward` runs in float16 under the DeepSpeed config `\"fp16\": {\"enabled\": True}` of "
     "`configs/ds_fp16.json` (run.py:8, "),
    ("lightning_true_half", "DTL404",
     "`Denoiser.configure_optimizers` runs in float16 under Lightning's `precision='16-true'` (fit.py:8, "),
    ("generate_half_chain", "DTL501",
     "`ForceToken.__call__` runs in float16 under `generate()` of the float16 model of line 11 (translate.py:12, "),
    ("self_halving_flag", "DTL404",
     "`Upscaler()` builds a model in float16 when `cfg.fp16` is true (nets.py:10, `self.half()`): "),
])
def test_framework_world_messages_name_the_setting_at_medium_confidence(folder, code, start):
    reports = engine.check_files(_files(PROJECTS / folder), Settings(), jobs=1, project=True)
    (finding,) = [f for r in reports for f in r.findings if f.code == code]
    assert finding.message.startswith(start), finding.message
    assert finding.confidence.name == "MEDIUM"


def test_submodule_cast_in_init_builds_a_partly_cast_model_for_callers():
    summaries = _summaries({
        "model.py": (
            "import torch.nn as nn\nclass Body(nn.Module):\n    pass\n"
            "class Wrapper(nn.Module):\n    def __init__(self, args):\n        super().__init__()\n"
            "        self.body = Body()\n        if args.half:\n            self.body.half()\n"
        ),
        "train.py": "import torch\nfrom model import Wrapper\nnet = Wrapper(args)\n",
    })
    project = Project(summaries)
    (built,) = project.returned()["train.py"]["Wrapper"]
    assert built.built and built.partial and built.world.condition == "args.half"
    world = recheck.returned_world([built], "Wrapper")
    assert not world.certain and world.description.startswith("`Wrapper()` builds a model in part in float16")
    # the class whose instance holds the cast submodule is not checked as if all of it were float16
    assert ("model.py", "Wrapper") not in project.worlds() and ("model.py", "Body") in project.worlds()


def test_deepspeed_config_named_through_an_import_or_json_file(tmp_path):
    summaries = _summaries({
        "cfg.py": "DS = {'bf16': {'enabled': True}}\nPATH = 'ds.json'\n",
        "net.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\nclass Other(nn.Module):\n    pass\n",
        "main.py": (
            "import deepspeed\nfrom cfg import DS, PATH\nfrom net import Net, Other\n"
            "deepspeed.initialize(model=Net(), config=DS)\ndeepspeed.initialize(model=Other(), config=PATH)\n"
        ),
    })
    (tmp_path / "ds.json").write_text('{"fp16": {"enabled": true}}')
    files = {path: str(tmp_path / path) for path in summaries}
    worlds = Project(summaries, files).worlds()
    assert [w.dtype for w in worlds[("net.py", "Net")]] == ["bf16"]
    assert [w.dtype for w in worlds[("net.py", "Other")]] == ["fp16"]
    (tmp_path / "ds.json").write_text("{not json")  # unreadable: no world, no traceback
    assert ("net.py", "Other") not in Project(summaries, files).worlds()
    assert ("net.py", "Other") not in Project(summaries).worlds()  # not on disk at all


def test_editing_the_deepspeed_json_changes_the_worlds_with_a_warm_cache(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(PROJECTS / "deepspeed_json_fp16", project)
    settings = Settings()

    def run():
        cache = Cache(tmp_path / "cache", settings)
        reports = engine.check_files(_files(project), settings, jobs=1, cache=cache, project=True)
        return {(r.path, f.code) for r in reports for f in r.findings}

    assert run() == {("spectral.py", "DTL509")}
    config = project / "configs" / "ds_fp16.json"
    config.write_text(config.read_text().replace('"fp16": {"enabled": true', '"fp16": {"enabled": false'))
    assert run() == set()


def test_helper_in_another_file_given_a_cast_built_instance():
    summaries = _summaries({
        "nets.py": (
            "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self, fp16):\n        super().__init__()\n"
            "        if fp16:\n            self.half()\nclass Plain(nn.Module):\n    pass\n"
        ),
        "helpers.py": "def make_optimizer(args, target):\n    pass\ndef other(module):\n    pass\n",
        "train.py": (
            "import helpers\nfrom nets import Net, Plain\nnet = Net(True).cuda()\n"
            "helpers.make_optimizer(None, target=net)\nhelpers.other(Plain())\n"
        ),
    })
    parameters = Project(summaries).parameters()
    (given,) = parameters["helpers.py"]["make_optimizer"]["target"]
    assert given.function == "Net" and given.built and not given.partial and given.world.condition == "fp16"
    assert "other" not in parameters["helpers.py"]  # Plain's constructor casts nothing


def test_cross_file_optimizer_helper_message():
    reports = engine.check_files(_files(PROJECTS / "optimizer_helper_elsewhere"), Settings(), jobs=1, project=True)
    (finding,) = [f for r in reports for f in r.findings]
    assert finding.message.startswith(
        "`make_optimizer` gets `target` from a caller in another file: `Model()` builds a model in part in "
        "float16 when `args.precision == 'half'` is true (model/__init__.py:18, `self.restorer.half()`): "
    )
    assert finding.confidence.name == "MEDIUM"


@pytest.mark.parametrize("source", [
    "import deepspeed\ndeepspeed.initialize(*args, **kwargs)\n",
    "import deepspeed\ndeepspeed.initialize(model=Net(), config=load())\n",
    "import deepspeed\ndeepspeed.initialize(model=Net(), config='/etc/ds.json')\n",
    "import deepspeed\ndeepspeed.initialize(model=Net(), config={'fp16': " + "{'x': " * 40 + "1" + "}" * 41 + ")\n",
    "import deepspeed\ncfg = {1: 2, **other}\ndeepspeed.initialize(model=Net(), config=cfg)\n",
    "import lightning as L\nL.Trainer(precision=p).fit()\nL.Trainer().fit(Net())\nt.fit(Net())\n",
    "lm.generate(logits_processor=[P()])\nf().generate(stopping_criteria=S())\n",
])
def test_odd_handoff_spellings_summarize_without_worlds(source):
    summaries = _summaries({"main.py": source, "net.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n"})
    assert Project(summaries).worlds() == {}


def test_lightning_module_loaded_from_a_checkpoint_and_validated_in_half():
    summaries = _summaries({
        "lit.py": "import lightning as L\nclass Lit(L.LightningModule):\n    pass\n",
        "evaluate.py": (
            "import lightning as L\nfrom lit import Lit\nmodel = Lit.load_from_checkpoint('last.ckpt')\n"
            "L.Trainer(precision='16-true').validate(model)\n"
        ),
    })
    (world,) = Project(summaries).worlds()[("lit.py", "Lit")]
    assert (world.dtype, world.trains, world.text) == ("fp16", False, "L.Trainer(precision='16-true').validate(model)")


@pytest.mark.parametrize("call", [
    "deepspeed.initialize(args=args, model=Net())",  # DeepSpeed reads args.deepspeed_config
    "deepspeed.initialize(args, Net(), config=args.deepspeed_config)",
])
def test_deepspeed_config_file_from_an_argparse_default(tmp_path, call):
    source = (
        "import argparse, deepspeed\nfrom net import Net\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--deepspeed-config', default='ds.json')\nargs = parser.parse_args()\n" + call + "\n"
    )
    summaries = _summaries({"main.py": source, "net.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n"})
    (tmp_path / "ds.json").write_text('{"bf16": {"enabled": true}}')
    files = {path: str(tmp_path / path) for path in summaries}
    (world,) = Project(summaries, files).worlds()[("net.py", "Net")]
    assert world.dtype == "bf16" and world.conditional and "`ds.json`" in world.setting


def test_a_cast_routine_of_the_class_itself_is_no_world():
    # lerobot's wall_x: ``to_bfloat16_for_selected_params`` casts self, then keeps parts float32
    summaries = _summaries({
        "m.py": (
            "import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n"
            "    def to_bf16_keeping_norms(self):\n        self.to(dtype=torch.bfloat16)\n"
            "class Half(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.half()\n"
        ),
    })
    worlds = Project(summaries).worlds()
    assert ("m.py", "Net") not in worlds
    (world,) = worlds[("m.py", "Half")]
    assert world.dtype == "fp16" and not world.conditional  # in ``__init__``: every instance


def test_a_processor_appended_to_the_list_given_to_generate():
    summaries = _summaries({
        "proc.py": "class StopOnTokens:\n    def __call__(self, input_ids, scores):\n        return scores\n",
        "run.py": (
            "import torch\nfrom transformers import AutoModelForCausalLM, StoppingCriteriaList\n"
            "from proc import StopOnTokens\n"
            "def chat(ids):\n    lm = AutoModelForCausalLM.from_pretrained('m', torch_dtype=torch.float16)\n"
            "    criteria = StoppingCriteriaList()\n    criteria.append(StopOnTokens())\n"
            "    return lm.generate(ids, stopping_criteria=criteria)\n"
        ),
    })
    (world,) = Project(summaries).worlds()[("proc.py", "StopOnTokens")]
    assert world.dtype == "fp16" and world.methods == ("__call__",) and world.conditional
# -- what functions return reaches their callers in other files --------------------------------
def _checked_summary(text: str, path: str = "loader.py") -> dict:
    return engine.check_text(text, path, Settings(), summarize=True).summary


def test_results_follow_a_dtype_parameter_and_keep_a_sibling_made_without_it():
    summary = _checked_summary(
        "import torch\nclass Loader:\n    def inputs(self, batch, dtype_override=None):\n"
        "        x = torch.randn(batch, 4)\n        if dtype_override is not None:\n"
        "            x = x.to(dtype_override)\n        mask = torch.zeros(batch, 4)\n        return x, mask\n"
        "def points(n):\n    import numpy as np\n    return torch.from_numpy(np.random.rand(n, 3))\n"
    )
    follows, fixed = summary["results"]["Loader.inputs"]["items"]
    assert (follows["follows"], follows["position"]) == ("dtype_override", 1)  # ``self`` is not counted
    assert (fixed["follows"], fixed["dtypes"], fixed["partial"], fixed["line"]) == (None, ["fp32"], False, 7)
    point = summary["results"]["points"]["value"]
    assert (point["kind"], point["dtypes"], point["numpy"]) == ("tensor", ["fp64"], True)


def test_a_method_of_an_imported_class_resolves_through_its_instance(tmp_path):
    # the case's caller is a test file, where DTL101 reports one level lower (and guesses at low
    # are dropped): the same program as a plain module shows what the resolution finds
    folder = tmp_path / "case"
    shutil.copytree(BENCH / "ttxla_loader_zeros_no_dtype_override", folder)
    (folder / "test_model.py").rename(folder / "run_model.py")
    reports = engine.check_files(_files(folder), Settings(min_confidence=Confidence.LOW), jobs=1, project=True)
    (finding,) = [f for r in reports if r.path == "run_model.py" for f in r.findings]
    assert finding.code == "DTL101" and "returned by `load_inputs()`" in finding.message
    assert "loader.py:21 (`torch.zeros(batch_size, 32 * 32)`)" in finding.message
    twin = BENCH / "ttxla_loader_zeros_no_dtype_override_fixed"
    reports = engine.check_files(_files(twin), Settings(min_confidence=Confidence.LOW), jobs=1, project=True)
    assert [f for r in reports for f in r.findings] == []  # every returned tensor takes the caller's dtype


def test_editing_the_helper_rechecks_its_caller(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(PROJECTS / "numpy_points_helper", project)
    settings = Settings()
    cache = Cache(tmp_path / "cache", settings)

    def run():
        reports = engine.check_files(_files(project), settings, jobs=1, cache=Cache(tmp_path / "cache", settings),
                                     project=True)
        return {(r.path, f.code, f.line) for r in reports for f in r.findings}

    assert run() == {("model.py", "DTL105", 20)}
    assert run() == {("model.py", "DTL105", 20)}  # warm
    utils = project / "utils.py"
    utils.write_text(utils.read_text().replace("return torch.tensor(grid)", "return torch.tensor(grid).float()"))
    assert run() == set()
    del cache


def test_constructor_argument_from_a_helper_in_another_file():
    folder = PROJECTS / "pos_weight_helper_bce"
    reports = engine.check_files(_files(folder), Settings(), jobs=1, project=True)
    (finding,) = [f for r in reports for f in r.findings]
    assert (finding.path, finding.line) == ("head.py", 13)  # where the loss is called, and raises
    assert "returned by `positive_weights()` at train.py:10" in finding.message
    assert finding.confidence.name == "MEDIUM"


# -- parts: submodules cast apart from the rest of their class --------------------------------
def test_part_world_message_names_the_attribute_the_condition_and_the_cast():
    folder = PROJECTS / "partial_encoder_other_file"
    reports = engine.check_files(_files(folder), Settings(), jobs=1, project=True)
    (finding,) = [f for r in reports for f in r.findings]
    assert finding.code == "DTL101" and finding.message.startswith(
        "`Classifier.forward` runs with `self.encoder` in float16 when `fp16_encoder` is true "
        "(serving/loader.py:10, `model.encoder.to(torch.float16)`): `self.encoder` is float16"
    )
    assert finding.confidence.name == "MEDIUM"  # the flag's branch: one reachable configuration


def test_part_cast_in_a_method_applies_only_when_the_program_calls_it():
    summaries = _summaries({
        "tagger.py": (PROJECTS / "partial_head_prepare" / "tagger.py").read_text(),
        "main.py": (PROJECTS / "partial_head_prepare" / "main.py").read_text(),
    })
    parts = Project(summaries).parts()
    (head,) = parts[("tagger.py", "Tagger")]["head"]
    assert (head.dtype, head.conditional, head.condition, head.line) == ("bf16", True, "low_memory", 14)
    assert "proj" not in parts[("tagger.py", "Tagger")]  # `unused_half` is never called
    summaries.pop("main.py")
    assert Project(summaries).parts() == {}  # nobody runs `prepare`


def test_part_chain_through_attributes_and_annotated_parameters():
    summaries = _summaries({
        "nets.py": (
            "import torch.nn as nn\nclass Encoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.blocks = nn.Linear(4, 4)\nclass Wrapper(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.model = Encoder()\n"
        ),
        "run.py": (
            "from nets import Wrapper\ndef shrink(net: Wrapper):\n    net.model.blocks.half()\n"
        ),
    })
    parts = Project(summaries).parts()
    assert list(parts) == [("nets.py", "Encoder")] and list(parts[("nets.py", "Encoder")]) == ["blocks"]


def test_built_low_parts_reach_the_models_that_contain_the_class():
    folder = PROJECTS / "half_prelu_blocks_other_file"
    summaries = _summaries({display: Path(fs).read_text() for display, fs in _files(folder)})
    (world,) = Project(summaries).built()["fit.py"]["Backbone"]
    assert (world.dtype, world.path, world.line, world.conditional) == ("fp16", "blocks.py", 9, False)
    reports = engine.check_files(_files(folder), Settings(), jobs=1, project=True)
    (finding,) = [f for r in reports for f in r.findings]
    # where the scaler unscales the float16 part's gradients, naming where the part is made
    assert (finding.code, finding.line) == ("DTL302", 16)
    assert "`net` is float32 with a float16 part since blocks.py:9 (`nn.PReLU(channels, dtype=torch.float16)`)" \
        in finding.message


def test_monkeypatched_forward_runs_in_the_world_of_the_model_cast_beside_it():
    summaries = _summaries({
        "attn.py": "def fast_forward(self, x):\n    return self.proj(x)\n",
        "hijack.py": (
            "import attn\ndef patch(model, half=True):\n    if half:\n        model = model.half()\n"
            "    for m in model.modules():\n        m.forward = attn.fast_forward.__get__(m)\n"
            "def untouched(model):\n    for m in model.modules():\n        m.forward = attn.fast_forward.__get__(m)\n"
        ),
    })
    (world,) = Project(summaries).bound()[("attn.py", "fast_forward")]
    assert (world.dtype, world.condition, world.path, world.line) == ("fp16", "half", "hijack.py", 4)
    folder = PROJECTS / "patched_forward_bf16"
    reports = engine.check_files(_files(folder), Settings(), jobs=1, project=True)
    (finding,) = [f for r in reports for f in r.findings]
    assert finding.message.startswith(
        "`chunked_mlp_forward` runs as the forward of modules in bfloat16 when `args.bf16` is true "
        "(app.py:10, `model.to(torch.bfloat16)`): `self.down` is bfloat16"
    )
    assert finding.confidence.name == "MEDIUM"


def test_a_class_that_freezes_parameters_builds_no_low_trainable_part():
    sources = {
        "net.py": (
            "import torch\nimport torch.nn as nn\nclass Distiller(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.student = nn.Linear(4, 4)\n"
            "        self.teacher = nn.Linear(4, 4, dtype=torch.float16)\n"
            "        self.teacher.requires_grad_(False)\n"
        ),
        "train.py": "from net import Distiller\nmodel = Distiller()\n",
    }
    assert Project(_summaries(sources)).built() == {}
    sources["net.py"] = sources["net.py"].replace("        self.teacher.requires_grad_(False)\n", "")
    assert list(Project(_summaries(sources)).built()["train.py"]) == ["Distiller"]


# -- calling contexts: what callers in other files pass a function (project/contexts.py) -----------
def _check_folder(folder: Path, **settings) -> list:
    reports = engine.check_files(_files(folder), Settings(**settings), jobs=1, project=True)
    assert not [e for r in reports for e in r.internal_errors]
    return [f for r in reports for f in r.findings]


def test_context_message_names_the_function_the_argument_and_the_call_site():
    (finding,) = _check_folder(PROJECTS / "ctx_metric_bf16_images")
    assert finding.path == "quality/blur.py" and finding.code == "DTL107"
    assert finding.message.startswith(
        "`blur_distance` is called with bfloat16 `prediction` from validate.py:10: `prediction` is bfloat16 "
        "since the call at validate.py:10 but `kernel` is float32"
    )
    assert finding.confidence.name == "HIGH"  # the only context, and the dtype certain


def test_context_of_a_method_comes_from_the_receiver_class():
    (finding,) = _check_folder(PROJECTS / "ctx_method_attention_fp16_keys")
    assert finding.message.startswith("`CrossAttention.forward` is called with bfloat16 `hidden` from pipeline.py:9: ")
    assert "but `keys` is float16" in finding.message


def test_context_is_handed_on_through_a_parameter():
    (finding,) = _check_folder(PROJECTS / "ctx_int8_matmul_chain")
    assert finding.path == "quant/kernels.py" and finding.code == "DTL109"
    assert finding.message.startswith(
        "`int_gemm` is called with int8 `lhs`, int8 `rhs` from layers.py:5, via `quantized_linear` from run.py:9: "
    )


def test_autocast_region_of_the_caller_reaches_the_callee():
    (finding,) = _check_folder(PROJECTS / "ctx_autocast_spectral_loss")
    assert "`spectral_loss` is called with float16 `prediction` under float16 autocast from train.py:9" in finding.message
    # a model's output under autocast is float16 where the flow knows it: a reachable configuration
    assert finding.confidence.name == "MEDIUM"


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


KERNEL = (
    "import torch\nimport torch.nn.functional as F\n\n\ndef blur(images):\n"
    "    kernel = torch.ones(3, 1, 3, 3) / 9\n"
    "    return F.conv2d(images, kernel, groups=3)\n"
)


def test_a_union_from_a_flag_is_a_reachable_context_medium(tmp_path):
    _write(tmp_path, {"ops.py": KERNEL, "main.py": (
        "import torch\nfrom ops import blur\n\n\ndef main(args, x):\n"
        "    dtype = torch.bfloat16 if args.bf16 else torch.float32\n"
        "    return blur(x.to(dtype))\n"
    )})
    (finding,) = _check_folder(tmp_path)
    assert finding.confidence.name == "MEDIUM"
    assert finding.message.startswith("`blur` is called with bfloat16 or float32 `images` from main.py:7: ")


def test_high_only_when_every_context_is_risky(tmp_path):
    ops = "import torch.nn.functional as F\n\n\ndef blur(images, kernel):\n    return F.conv2d(images, kernel, groups=3)\n"
    a = "import torch\nfrom ops import blur\n\n\ndef f(x):\n    return blur(x.half(), torch.ones(3, 1, 3, 3))\n"
    b = "import torch\nfrom ops import blur\n\n\ndef g(x):\n    return blur(x.half(), torch.ones(3, 1, 3, 3).half())\n"
    # b.py passes a matching kernel: only one of the two contexts fails, a reachable configuration
    _write(tmp_path, {"ops.py": ops, "a.py": a, "b.py": b})
    (finding,) = _check_folder(tmp_path)
    assert finding.message.startswith("`blur` is called with float16 `images` from a.py:6: ")
    assert finding.confidence.name == "MEDIUM"
    _write(tmp_path, {"b.py": b.replace("torch.ones(3, 1, 3, 3).half()", "torch.ones(3, 1, 3, 3).double()")})
    (finding,) = _check_folder(tmp_path)
    assert finding.confidence.name == "HIGH"  # float32 and float64 kernels: every context fails


def test_callers_that_pass_float32_or_the_same_file_add_nothing(tmp_path):
    _write(tmp_path, {"ops.py": KERNEL + "\n\ndef local(x):\n    return blur(x.float())\n",
                      "main.py": "from ops import blur\n\n\ndef main(x):\n    return blur(x.float())\n"})
    assert _check_folder(tmp_path) == []


def test_contexts_are_deduplicated_bounded_and_sorted():
    from dtype_lint.project.contexts import MAX_CONTEXTS, call_contexts

    callers = {f"c{i}.py": f"import torch\nfrom ops import blur\n\n\ndef f(x):\n    return blur(x.to(torch.{cast}))\n"
               for i, cast in enumerate(["float16", "float16", "bfloat16", "float64", "float16", "bfloat16"])}
    sources = {"ops.py": KERNEL, **callers}
    from dtype_lint.engine import check_text

    summaries = {path: check_text(text, path, Settings(), summarize=True).summary for path, text in sources.items()}
    contexts = call_contexts(Project(summaries))[("ops.py", "blur")]
    assert len(contexts) == MAX_CONTEXTS
    assert [(c.path, c.args[0][1]) for c in contexts] == [("c0.py", ("fp16",)), ("c2.py", ("bf16",)), ("c3.py", ("fp64",))]
    assert summaries["ops.py"]["call_sites"] == []  # the callee passes nothing on


def test_call_sites_carry_the_flow_dtypes_and_skip_library_calls():
    from dtype_lint.engine import check_text

    text = ("import torch\nfrom metrics import iou\n\n\ndef f(a, b):\n"
            "    m = a.to(torch.uint8)\n    z = torch.matmul(m, m)\n    return iou(m, b)\n")
    summary = check_text(text, "val.py", Settings(), summarize=True).summary
    (site,) = summary["call_sites"]
    assert site["callee"] == {"name": "iou"} and site["owner"] == "f" and site["line"] == 8
    assert site["args"] == [{"at": 0, "dtypes": ["int"], "partial": False, "integer": "uint8"}]
    assert site["passes"] == [{"at": 1, "param": "b"}]


def test_editing_the_caller_reanalyses_the_callee_under_the_new_context(tmp_path):
    project = _write(tmp_path / "p", {"ops.py": KERNEL,
                                      "main.py": "from ops import blur\n\n\ndef main(x):\n    return blur(x.half())\n"})
    settings = Settings()

    def run():
        cache = Cache(tmp_path / "cache", settings)
        reports = engine.check_files(_files(project), settings, jobs=1, cache=cache, project=True)
        return [(r.path, f.code, f.message.split(":")[0]) for r in reports for f in r.findings]

    assert run() == [("ops.py", "DTL107", "`blur` is called with float16 `images` from main.py")]
    assert run() == [("ops.py", "DTL107", "`blur` is called with float16 `images` from main.py")]  # warm
    main = project / "main.py"
    main.write_text(main.read_text().replace("x.half()", "x.float()"))
    assert run() == []
    main.write_text(main.read_text().replace("x.float()", "x.bfloat16()"))
    assert run() == [("ops.py", "DTL107", "`blur` is called with bfloat16 `images` from main.py")]


def test_a_cached_summary_of_an_older_format_is_rebuilt(tmp_path):
    import json

    from dtype_lint.project.summary import FORMAT

    project = _write(tmp_path / "p", {"ops.py": KERNEL,
                                      "main.py": "from ops import blur\n\n\ndef main(x):\n    return blur(x.half())\n"})
    settings = Settings()
    cache = Cache(tmp_path / "cache", settings)
    engine.check_files(_files(project), settings, jobs=1, cache=cache, project=True)
    for entry in (tmp_path / "cache").rglob("*.json"):
        data = json.loads(entry.read_text())
        if isinstance(data.get("summary"), dict):
            data["summary"] = {**data["summary"], "format": FORMAT - 1, "call_sites": []}
            entry.write_text(json.dumps(data))
    reports = engine.check_files(_files(project), settings, jobs=1, cache=Cache(tmp_path / "cache", settings),
                                 project=True)
    assert [(r.path, f.code) for r in reports for f in r.findings] == [("ops.py", "DTL107")]


def test_context_rules_are_registered_codes():
    from dtype_lint.rules import all_rules

    assert recheck.CONTEXT_RULES <= {rule.code for rule in all_rules()}




# -- autocast worlds: a class called under autocast elsewhere runs its forward under it --------
def _findings_of(folder: str) -> list:
    reports = engine.check_files(_files(PROJECTS / folder), Settings(), jobs=1, project=True)
    return [f for r in reports for f in r.findings]


def test_autocast_world_message_names_the_method_the_condition_and_the_region():
    (finding,) = _findings_of("scorer_fp16_autocast_engine")
    assert finding.message.startswith(
        "`CrossScorer._masked` runs under float16 autocast when `self.use_amp` is true "
        "(engine.py:18, `amp_ctx(\"cuda\", dtype=torch.float16)`): `NEG_FILL`"
    )
    assert finding.confidence.name == "MEDIUM"  # the region is entered on some runs only


def test_framework_precision_runs_the_trained_module_and_its_submodules_under_autocast():
    found = _findings_of("lightning_spectral_16_mixed")
    assert {(f.code, f.line) for f in found} == {("DTL509", 15), ("DTL509", 16)}
    first = min(found, key=lambda f: f.line)
    assert first.message.startswith(
        "`SpectralMixer.forward` runs under float16 autocast (train.py:25, "
        "`L.Trainer(precision=\"16-mixed\", max_epochs=3)`, through `Denoiser`): `torch.fft.rfft` on `hidden`"
    )
    assert first.confidence.name == "HIGH"  # a literal precision and a conv output: float16 on every run


def test_free_function_a_method_under_autocast_calls_runs_under_it():
    (finding,) = _findings_of("method_calls_masking_helper")
    assert finding.message.startswith(
        "`masked_similarity` runs under float16 autocast when `amp` is true (serve.py:8, "
    ) and "through `DualEncoder.search`" in finding.message


def _autocast_worlds(sources: dict[str, str]) -> dict:
    return {cls: [(i.world.dtype, i.world.conditional, i.entries, i.activations, i.world.via) for i in items]
            for cls, items in Project(_summaries(sources)).autocast_worlds().items()}


MODELS = (
    "import torch.nn as nn\n"
    "class Head(nn.Module):\n    def forward(self, x):\n        return x\n"
    "class Base(nn.Module):\n    def forward(self, x):\n        return self.project(x)\n"
    "    def project(self, x):\n        return x\n    def export(self):\n        pass\n"
    "class Net(Base):\n    def __init__(self):\n        super().__init__()\n        self.head = Head()\n"
)


def test_autocast_worlds_reach_called_methods_bases_and_submodules():
    worlds = _autocast_worlds({
        "models.py": MODELS,
        "train.py": "import torch\nfrom models import Net\nnet = Net()\n"
                    "with torch.autocast('cuda'):\n    net(1)\n",
    })
    assert worlds[("models.py", "Net")] == [("fp16", False, ("forward", "project"), False, None)]
    assert worlds[("models.py", "Base")] == [("fp16", False, ("forward", "project"), False, None)]
    # a submodule: every method, its inputs made under autocast
    assert worlds[("models.py", "Head")] == [("fp16", False, (), True, "Net")]


def test_autocast_regions_that_run_nothing_low_make_no_world():
    program = "import torch\nfrom models import Net\nnet = Net()\nwith {}:\n    net(1)\n"
    for region in ("torch.autocast('cuda', enabled=False)", "torch.autocast('cuda', dtype=torch.float32)",
                   "torch.autocast(device_type=device_of())"):
        assert _autocast_worlds({"models.py": MODELS, "train.py": program.format(region)}) == {}, region
    (cpu,) = _autocast_worlds({"models.py": MODELS, "train.py": program.format("torch.autocast('cpu')")})[
        ("models.py", "Net")]
    assert cpu[0] == "bf16"  # CPU autocast's default dtype
    (flag,) = _autocast_worlds({"models.py": MODELS, "train.py": program.format(
        "torch.cuda.amp.autocast(enabled=args.amp)")})[("models.py", "Net")]
    assert flag[:2] == ("fp16", True)


def test_a_model_handed_to_a_function_is_a_guess_at_medium():
    worlds = _autocast_worlds({
        "models.py": MODELS,
        "loop.py": "import torch\nclass Local(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                   "def step(model, policy, x):\n    with torch.autocast('cuda'):\n"
                   "        model(x)\n        policy.export()\n",
    })
    # ``model(x)``: a module class of the same file; ``policy.export()``: the one class with that method
    assert worlds[("loop.py", "Local")] == [("fp16", True, ("forward",), False, None)]
    assert worlds[("models.py", "Base")] == [("fp16", True, ("export",), False, None)]


def test_framework_runners_need_a_framework_autocast_source():
    fit = "from models import Net\nimport lightning as L\n{}\nL.Trainer(max_epochs=1).fit(Net())\n"
    assert _autocast_worlds({"models.py": MODELS, "train.py": fit.format("")}) == {}
    worlds = _autocast_worlds({"models.py": MODELS, "train.py": fit.format("L.Trainer(precision='bf16-mixed')")})
    assert worlds[("models.py", "Net")][0][:3] == (
        "bf16", False, ("forward", "predict_step", "project", "test_step", "training_step", "validation_step"))
    prepare = "from accelerate import Accelerator\nfrom models import Net\nacc = Accelerator({})\n" \
              "accelerator = acc\nmodel = accelerator.prepare(Net())\n"
    assert _autocast_worlds({"models.py": MODELS, "run.py": prepare.format("")}) == {}
    assert ("models.py", "Net") in _autocast_worlds({"models.py": MODELS, "run.py": prepare.format(
        "mixed_precision='fp16'")})


def test_autocast_functions_follow_method_calls_across_files():
    summaries = _summaries({
        "ops.py": "import torch\ndef inner(x):\n    return x\ndef outer(x):\n    return inner(x)\n"
                  "def unused(x):\n    return x\n",
        "model.py": "import torch\nfrom ops import outer\nclass M(torch.nn.Module):\n"
                    "    def forward(self, x):\n        return outer(x)\n",
        "run.py": "import torch\nfrom model import M\nm = M()\nwith torch.autocast('cuda'):\n    m(1)\n",
    })
    project = Project(summaries)
    functions = project.autocast_functions(project.autocast_worlds())
    assert sorted(functions) == [("ops.py", "inner"), ("ops.py", "outer")]
    assert {i.world.via for i in functions[("ops.py", "inner")]} == {"M.forward"}


def test_autocast_dtype_chosen_at_run_time_is_a_reachable_configuration():
    program = ("import torch\nfrom models import Net\nnet = Net()\n{}\n"
               "with torch.autocast('cuda', dtype={}):\n    net(1)\n")
    for assign, dtype in (("amp_dtype = torch.bfloat16 if bf16 else torch.float16", "amp_dtype"),
                          ("", "torch.float16 if args.fp16 else torch.float32")):
        (world,) = _autocast_worlds({"models.py": MODELS, "train.py": program.format(assign, dtype)})[
            ("models.py", "Net")]
        assert world[:2] == ("fp16", True), dtype


def test_changing_the_autocast_region_in_one_file_reanalyses_the_class_in_another(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(PROJECTS / "scorer_fp16_autocast_engine", project)
    files, settings = _files(project), Settings()

    def run():
        cache = Cache(tmp_path / "cache", settings)
        reports = engine.check_files(files, settings, jobs=1, cache=cache, project=True)
        return {(r.path, f.code, f.line) for r in reports for f in r.findings}

    cold = run()
    assert cold == {("nets/scorers.py", "DTL501", 20)}
    engine_py = project / "engine.py"
    float16 = 'amp_ctx("cuda", dtype=torch.float16)'
    engine_py.write_text(engine_py.read_text().replace(float16, 'amp_ctx("cuda", dtype=torch.bfloat16)'))
    assert run() == set()  # -1e9 fits bfloat16
    engine_py.write_text(engine_py.read_text().replace('amp_ctx("cuda", dtype=torch.bfloat16)', float16))
    assert run() == cold


def test_accelerate_prepare_makes_an_autocast_world_not_a_cast_one():
    (finding,) = _findings_of("accelerate_prepare_keeps_fp32")
    assert finding.message.startswith("`Scorer.forward` runs under float16 autocast (train.py:10, ")
    assert "runs in float16" not in finding.message  # the parameters stay float32


def test_helper_cast_whose_dtype_is_unknown_is_no_helper():
    # a hand-off cast the summary records without a dtype (seen on the unseen corpus) crashed the pass
    from dtype_lint.project.helpers import _helper

    cast = {"refs": ["param:model"], "dtype": None, "line": 2, "text": "engine(model)"}
    assert _helper("a.py", "wrap", {"params": ["model"], "line": 1}, cast) is None
    assert _helper("a.py", "wrap", {"params": ["model"], "line": 1}, {**cast, "dtype": "fp16"}) is not None


def test_a_failing_project_pass_keeps_the_file_findings_and_reports_an_internal_error(tmp_path, monkeypatch):
    import dtype_lint.project.recheck as recheck

    def broken(*args, **kwargs):
        raise AttributeError("boom")

    monkeypatch.setattr(recheck, "apply_worlds", broken)
    (tmp_path / "a.py").write_text("import torch\nm = torch.nn.Linear(2, 2).half()\nm(torch.zeros(2))\n")
    (report,) = engine.check_files([("a.py", str(tmp_path / "a.py"))], Settings(), jobs=1, project=True)
    assert [f.code for f in report.findings] == ["DTL101"]
    assert report.internal_errors == ["internal error in the project pass: AttributeError: boom"]


def test_recheck_runs_only_the_rules_whose_findings_it_can_keep(monkeypatch):
    # rules_that_count() narrows the re-check to the codes _in_world and the calling contexts
    # accept: running every rule must add nothing on any project fixture
    def check_all(everything: bool):
        if everything:
            monkeypatch.setattr(recheck, "rules_that_count", lambda file_worlds: None)
        found = {}
        for folder in FOLDERS:
            reports = engine.check_files(_files(folder), Settings(), jobs=1, project=True, data=_data(folder))
            found[folder.name] = [(r.path, f.to_json()) for r in reports for f in r.findings]
        return found

    narrowed = check_all(everything=False)
    assert narrowed == check_all(everything=True)
    assert any(narrowed.values())


def test_recheck_rules_follow_what_the_file_is_told():
    from dtype_lint.facts.flow.seeding import FileWorlds

    assert recheck.rules_that_count(FileWorlds(classes={}, returned={}, values={"f": ()})) == recheck.VALUE_RULES
    assert recheck.rules_that_count(FileWorlds(classes={}, returned={}, config={"py:cfg.fp16": []})) is None
    assert recheck.rules_that_count(FileWorlds(classes={}, returned={})) == frozenset()

"""The catalog of framework precision sources (dtype_lint.facts.precision_sources): every entry
found with the effect it implies, look-alikes left alone, and the accelerate ``prepare()`` case
the catalog settles for DTL101."""

import textwrap

import libcst as cst
import pytest

from dtype_lint.config import Settings
from dtype_lint.engine import check_text
from dtype_lint.facts.precision_sources import CATALOG, FLAG_EFFECTS, Effect, sources_in
from dtype_lint.findings import Confidence

AMP16 = Effect(autocast="fp16", scaler=True)
AMP_BF16 = Effect(autocast="bf16")


def sources(source: str):
    return [(f.framework, f.effect) for f in sources_in(cst.parse_module(textwrap.dedent(source)))]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from transformers import TrainingArguments\nTrainingArguments('out', fp16=True)\n",
         [("transformers", AMP16)]),
        ("from transformers import Seq2SeqTrainingArguments as A\nA('out', bf16=True)\n",
         [("transformers", AMP_BF16)]),
        ("import transformers\ntransformers.TrainingArguments('o', fp16=False)\n", []),
        ("from accelerate import Accelerator\nAccelerator(mixed_precision='fp16')\n", [("accelerate", AMP16)]),
        ("from accelerate import Accelerator\nAccelerator(mixed_precision='bf16')\n", [("accelerate", AMP_BF16)]),
        ("from accelerate import Accelerator\nAccelerator(mixed_precision='no')\n", []),
        ("import lightning as L\nL.Trainer(precision='16-mixed')\n", [("lightning", AMP16)]),
        ("import pytorch_lightning as pl\npl.Trainer(precision=16)\n", [("lightning", AMP16)]),
        ("import lightning as L\nL.Trainer(precision='bf16-mixed')\n", [("lightning", AMP_BF16)]),
        ("import lightning as L\nL.Fabric(precision='16-true')\n", [("lightning", Effect(params="fp16"))]),
        ("import lightning as L\nL.Trainer(precision='bf16-true')\n", [("lightning", Effect(params="bf16"))]),
        ("import lightning as L\nL.Trainer(precision='32')\n", []),
        ("import torch\nAutoModel.from_pretrained('m', torch_dtype=torch.float16)\n",
         [("from_pretrained", Effect(params="fp16"))]),
        ("import torch\nAutoModel.from_pretrained('m', dtype=torch.bfloat16)\n",
         [("from_pretrained", Effect(params="bf16"))]),
        ("Pipe.from_pretrained('m', variant='fp16')\n", [("from_pretrained", Effect(params="fp16", conditional=True))]),
        ("Pipe.from_pretrained('m', revision='fp16')\n", [("from_pretrained", Effect(params="fp16", conditional=True))]),
        ("Pipe.from_pretrained('m', revision='main')\n", []),
        ("ds_config = {'train_batch_size': 8, 'fp16': {'enabled': True}}\n",
         [("deepspeed", Effect(params="fp16", scaler=True))]),
        ("ds_config = {'bf16': {'enabled': True}}\n", [("deepspeed", Effect(params="bf16"))]),
        ("ds_config = {'fp16': {'enabled': False}}\n", []),
        ("import torch\nweight_dtype = torch.float16 if args.mixed_precision == 'fp16' else torch.float32\n",
         [("dtype-choice", Effect(params="fp16", conditional=True))]),
        ("dtype = 'bfloat16' if torch.cuda.is_bf16_supported() else 'float16'\n",
         [("dtype-choice", Effect(params="bf16"))]),
        ("mode = 'fast' if quick else 'slow'\n", []),
        # Look-alikes: an unrelated class's ``fp16=`` and a user's own Trainer.
        ("Config(fp16=True)\nclass Trainer:\n    pass\nTrainer(precision=16)\n", []),
    ],
)
def test_catalog_entry(source, expected):
    assert sources(source) == expected


@pytest.mark.parametrize("flag", sorted(FLAG_EFFECTS))
def test_argparse_flags_are_conditional_sources(flag):
    found = sources(f"parser.add_argument({flag!r}, action='store_true')\n")
    assert found == [("argparse", FLAG_EFFECTS[flag])]
    assert found[0][1].conditional


def test_unrelated_argparse_flag_is_not_a_source():
    assert sources("parser.add_argument('--lr', type=float)\n") == []


def test_every_catalog_entry_names_its_argument_and_effects():
    # A newcomer's entry must say which argument to read and what each value implies.
    for source in CATALOG:
        assert source.callables and source.argument and source.effects
        assert all(isinstance(effect, Effect) for effect in source.effects.values())


def test_sources_come_in_source_order_with_descriptions():
    found = sources_in(cst.parse_module(
        "from accelerate import Accelerator\nimport lightning as L\n"
        "L.Trainer(precision='bf16-true')\nAccelerator(mixed_precision='fp16')\n"
    ))
    assert [f.description for f in found] == ['`precision="bf16-true"`', '`mixed_precision="fp16"`']


# -- accelerate prepare() and DTL101 ----------------------------------------------------------
PREPARED = """\
import torch
from accelerate import Accelerator
accelerator = Accelerator(mixed_precision={precision!r})
net = torch.nn.Linear(4, 2).half()
net = accelerator.prepare(net)
net(torch.randn(1, 4))
"""


def dtl101_lines(source: str) -> list[int]:
    report = check_text(source, "train.py", Settings(select=("DTL101",), min_confidence=Confidence.LOW))
    assert not report.internal_errors, report.internal_errors
    return [f.line for f in report.findings]


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_prepare_under_mixed_precision_wraps_forward_in_autocast(precision):
    assert dtl101_lines(PREPARED.format(precision=precision)) == []


def test_prepare_without_mixed_precision_still_flags_the_half_model():
    assert dtl101_lines(PREPARED.format(precision="no")) == [6]


def test_prepare_of_several_objects_marks_only_modules():
    source = PREPARED.replace("net = accelerator.prepare(net)", "net, opt = accelerator.prepare(net, opt)")
    assert dtl101_lines(source.format(precision="fp16")) == []
    assert dtl101_lines(source.format(precision="no")) == [6]


# -- DTL301: a framework's own GradScaler over a bf16 model ----------------------------------
FRAMEWORK_BF16 = """\
import torch
import lightning as L
from accelerate import Accelerator
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("m", dtype={dtype})
Trainer(model=model, args=TrainingArguments("o", {hf}=True)).train()
accelerator = Accelerator(mixed_precision={accelerate!r})
net = torch.nn.Linear(2, 2).to({dtype})
net = accelerator.prepare(net)
L.Trainer(precision={lightning!r}).fit(net)
"""


def dtl301(source: str) -> list[tuple[int, Confidence]]:
    report = check_text(source, "train.py", Settings(select=("DTL301",), min_confidence=Confidence.LOW))
    assert not report.internal_errors, report.internal_errors
    return [(f.line, f.confidence) for f in report.findings]


def test_fp16_framework_scaler_over_bf16_model_is_flagged_per_framework():
    source = FRAMEWORK_BF16.format(dtype="torch.bfloat16", hf="fp16", accelerate="fp16", lightning="16-mixed")
    # at the setting that makes the scaler (``fp16=True``, ``mixed_precision="fp16"``, ``precision=...``)
    assert dtl301(source) == [(7, Confidence.HIGH), (8, Confidence.HIGH), (11, Confidence.HIGH)]


def test_bf16_settings_or_fp16_models_are_not_dtl301():
    bf16_everywhere = FRAMEWORK_BF16.format(dtype="torch.bfloat16", hf="bf16", accelerate="bf16", lightning="bf16-mixed")
    assert dtl301(bf16_everywhere) == []
    fp16_models = FRAMEWORK_BF16.format(dtype="torch.float16", hf="fp16", accelerate="fp16", lightning="16-mixed")
    assert dtl301(fp16_models) == []


def test_a_model_that_may_be_bf16_is_medium_confidence():
    source = FRAMEWORK_BF16.format(dtype="torch.bfloat16", hf="fp16", accelerate="no", lightning="32").replace(
        'model = AutoModelForCausalLM.from_pretrained("m", dtype=torch.bfloat16)',
        'model = AutoModelForCausalLM.from_pretrained("m")\nif args.bf16:\n    model = model.to(torch.bfloat16)',
    )
    assert dtl301(source) == [(9, Confidence.MEDIUM)]


@pytest.mark.parametrize("framework", [
    "from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='bf16')\n",
    "import lightning as L\ntrainer = L.Trainer(precision='bf16-mixed')\n",
])
def test_hand_made_scaler_under_a_bf16_framework_is_dtl301(framework):
    source = "import torch\n" + framework + "scaler = torch.amp.GradScaler('cuda')\n"
    assert dtl301(source) == [(4, Confidence.HIGH)]
    assert dtl301(source.replace("bf16", "fp16")) == []


# -- DTL302: Lightning's own scaler over a float16 module -------------------------------------
LIGHTNING_HALF = """\
import torch
import lightning as L

model = torch.nn.Linear(4, 2).half()
trainer = L.Trainer(precision={precision!r})
trainer.fit(model)
"""


def test_lightning_16_mixed_fit_of_a_half_module_is_dtl302():
    report = check_text(LIGHTNING_HALF.format(precision="16-mixed"), "train.py", Settings(select=("DTL302",)))
    # reported at the cast that makes the trained weights float16, where the fix goes
    assert [(f.line, f.confidence) for f in report.findings] == [(4, Confidence.HIGH)]
    assert 'precision="16-mixed"' in report.findings[0].message


@pytest.mark.parametrize("precision", ["bf16-mixed", "32"])
def test_lightning_without_fp16_scaling_is_not_dtl302(precision):
    report = check_text(LIGHTNING_HALF.format(precision=precision), "train.py", Settings(select=("DTL302",)))
    assert report.findings == []


# -- DTL303: torch clipping between accelerator.backward and the step under fp16 -------------
ACCELERATE_CLIP = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator(mixed_precision={precision!r})
model, optimizer = accelerator.prepare(model, optimizer)
for x, y in loader:
    accelerator.backward(torch.nn.functional.mse_loss(model(x), y))
    {clip}(model.parameters(), 1.0)
    optimizer.step()
"""


def dtl303(precision: str, clip: str) -> list[int]:
    source = ACCELERATE_CLIP.format(precision=precision, clip=clip)
    report = check_text(source, "train.py", Settings(select=("DTL303",), min_confidence=Confidence.LOW))
    assert not report.internal_errors, report.internal_errors
    return [f.line for f in report.findings]


def test_torch_clip_after_accelerator_backward_under_fp16_is_dtl303():
    assert dtl303("fp16", "torch.nn.utils.clip_grad_norm_") == [8]


@pytest.mark.parametrize("precision, clip", [
    ("bf16", "torch.nn.utils.clip_grad_norm_"),  # no scaler in bf16
    ("no", "torch.nn.utils.clip_grad_norm_"),
    ("fp16", "accelerator.clip_grad_norm_"),  # unscales first
])
def test_accelerate_clip_without_scaled_gradients_is_clean(precision, clip):
    assert dtl303(precision, clip) == []


# -- settings chosen at run time: each catalog value the setting may take is a conditional source --
@pytest.mark.parametrize("source, expected", [
    # argparse choices (and default) of the flag the argument reads
    ("from accelerate import Accelerator\nparser.add_argument('--mixed_precision', choices=['no', 'fp16'])\n"
     "Accelerator(mixed_precision=args.mixed_precision)\n",
     [("argparse", FLAG_EFFECTS["--mixed_precision"]), ("accelerate", Effect(autocast="fp16", scaler=True, conditional=True))]),
    # the literals the program compares the setting with (its parser may be in another file)
    ("import lightning as L\nif cfg.precision == 'bf16-true':\n    pass\nL.Trainer(precision=cfg.precision)\n",
     [("lightning", Effect(params="bf16", conditional=True))]),
    # a ternary of literals
    ("from accelerate import Accelerator\nAccelerator(mixed_precision='bf16' if fast else 'no')\n",
     [("accelerate", Effect(autocast="bf16", conditional=True))]),
    # a setting nothing in the file names a value for stays unknown
    ("from accelerate import Accelerator\nAccelerator(mixed_precision=config['mixed_precision'])\n", []),
])
def test_run_time_settings_are_conditional_sources(source, expected):
    assert sources(source) == expected


CONDITIONAL_FP16 = """\
import torch
from accelerate import Accelerator
from diffusers import UNet2DConditionModel


def main(args):
    accelerator = Accelerator(mixed_precision=args.mixed_precision)
    weight_dtype = torch.float16 if args.mixed_precision == "fp16" else torch.float32
    unet = UNet2DConditionModel.from_pretrained(args.model, subfolder="unet", {load})
    optimizer = torch.optim.AdamW(unet.parameters(), lr=1e-5)
    unet, optimizer = accelerator.prepare(unet, optimizer)
"""


def dtl302(source: str) -> list[tuple[int, Confidence]]:
    report = check_text(source, "train.py", Settings(select=("DTL302",), min_confidence=Confidence.LOW))
    assert not report.internal_errors, report.internal_errors
    return [(f.line, f.confidence) for f in report.findings]


def test_trained_weights_loaded_in_the_dtype_of_a_run_time_fp16_setting_are_dtl302_at_the_load():
    assert dtl302(CONDITIONAL_FP16.format(load="torch_dtype=weight_dtype")) == [(9, Confidence.MEDIUM)]


@pytest.mark.parametrize("load", ["revision=None", "torch_dtype=torch.float32"])
def test_trained_weights_kept_float32_under_a_run_time_fp16_setting_are_clean(load):
    assert dtl302(CONDITIONAL_FP16.format(load=load)) == []


RUN_TIME_FP16_ON_BF16 = """\
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("m", dtype=torch.bfloat16)
args = TrainingArguments(
    "out",
    fp16={fp16},
)
Trainer(model=model, args=args).train()
"""


def test_a_run_time_fp16_setting_over_a_bf16_model_is_dtl301_at_the_setting():
    assert dtl301(RUN_TIME_FP16_ON_BF16.format(fp16="False if use_cpu else True")) == [(7, Confidence.MEDIUM)]
    # a literal setting is reported where it is written too: the line the fix changes
    assert dtl301(RUN_TIME_FP16_ON_BF16.format(fp16="True")) == [(7, Confidence.HIGH)]
    assert dtl301(RUN_TIME_FP16_ON_BF16.format(fp16="False if use_cpu else False")) == []


CLI_ARGS = """\
import torch
import transformers


def train():
    parser = transformers.HfArgumentParser(({classes}))
    model_args, training_args = parser.parse_args_into_dataclasses()
    model = transformers.AutoModelForCausalLM.from_pretrained(model_args.name)
    model = model.to({dtype})
    transformers.Trainer(model=model, args=training_args).train()
"""


def test_training_arguments_from_the_command_line_may_be_fp16_or_bf16():
    found = sources(CLI_ARGS.format(classes="ModelArguments, transformers.TrainingArguments", dtype="torch.bfloat16"))
    assert found == [("transformers", Effect(autocast="fp16", scaler=True, conditional=True)),
                     ("transformers", Effect(autocast="bf16", conditional=True))]


def test_a_hard_coded_bf16_cast_under_command_line_training_arguments_is_dtl301_at_the_cast():
    assert dtl301(CLI_ARGS.format(classes="ModelArguments, transformers.TrainingArguments", dtype="torch.bfloat16")) \
        == [(9, Confidence.MEDIUM)]
    assert dtl301(CLI_ARGS.format(classes="ModelArguments, transformers.TrainingArguments", dtype="torch.float32")) == []
    assert dtl301(CLI_ARGS.format(classes="ModelArguments, DataArguments", dtype="torch.bfloat16")) == []


# -- the handoff catalog: frameworks that cast the model handed to them (project worlds) ------
from dtype_lint.facts.precision_sources import (  # noqa: E402
    CALLBACKS, HANDOFFS, deepspeed_setting, from_pretrained_params, lightning_params,
)


@pytest.mark.parametrize("config, expected", [
    ({"fp16": {"enabled": True}}, "fp16"),
    ({"bf16": {"enabled": True}}, "bf16"),
    ({"bfloat16": {"enabled": True}}, "bfloat16"),  # DeepSpeed's alias of "bf16"
    ({"fp16": {"enabled": False}, "bf16": {"enabled": True}}, "bf16"),
    ({"fp16": {"enabled": "auto"}}, None),  # filled in by the Hugging Face Trainer's own flags
    ({"fp16": True}, None),
    ({"train_batch_size": 8}, None),
    ([1, 2], None),
    (None, None),
])
def test_deepspeed_setting_of_plain_config_data(config, expected):
    assert deepspeed_setting(config) == expected


def test_deepspeed_bfloat16_alias_is_a_source_in_source_too():
    assert sources("cfg = {'bfloat16': {'enabled': True}}\n") == [("deepspeed", Effect(params="bf16"))]


@pytest.mark.parametrize("value, expected", [
    ("16-true", "fp16"), ("bf16-true", "bf16"), ("16-mixed", None), ("bf16-mixed", None), (16, None), ("32", None),
    (None, None),
])
def test_lightning_precisions_that_cast_the_parameters(value, expected):
    assert lightning_params(value) == expected


@pytest.mark.parametrize("argument, value, expected", [
    ("torch_dtype", "float16", ("fp16", False)), ("dtype", "bfloat16", ("bf16", False)),
    ("variant", "fp16", ("fp16", True)), ("revision", "main", None), ("torch_dtype", "float32", None),
    ("device_map", "auto", None),
])
def test_from_pretrained_parameter_dtypes(argument, value, expected):
    assert from_pretrained_params(argument, value) == expected


def test_every_handoff_names_the_model_argument_and_where_the_dtype_comes_from():
    for handoff in HANDOFFS:
        assert handoff.callables and handoff.model and handoff.position >= 0
        # a handoff's dtype comes from a config, a dtype keyword, or the object a Source made
        assert handoff.config or handoff.dtype or handoff.made_by
        if handoff.made_by:
            assert any(source.framework == handoff.made_by for source in CATALOG)
    for callback in CALLBACKS:
        assert callback.method and callback.keywords and callback.calls


@pytest.mark.parametrize("source, expected", [
    ("import deepspeed\ndeepspeed.initialize(model=Net(), config={'fp16': {'enabled': True}})\n",
     [("fp16", False, ["Net"])]),
    ("from deepspeed import initialize\ncfg = {'bf16': {'enabled': True}}\ninitialize(None, Net(), config=cfg)\n",
     [("bf16", False, ["Net"])]),
    ("import deepspeed, torch\ndeepspeed.init_inference(Net(), dtype=torch.half)\n", [("fp16", False, ["Net"])]),
    ("import deepspeed\ndef go():\n    ds = dict(train_batch_size=8, fp16=dict(enabled=True))\n"
     "    deepspeed.initialize(model=Net(), config=ds)\n", [("fp16", False, ["Net"])]),
    ("import lightning as L\nL.Trainer(precision='16-true').fit(Net())\n", [("fp16", True, ["Net"])]),
    ("import lightning as L\nt = L.Trainer(precision='bf16-true')\nt.validate(model=Net())\n", [("bf16", False, ["Net"])]),
    ("import lightning as L\nfabric = L.Fabric(precision='16-true')\nfabric.setup(Net())\n", [("fp16", True, ["Net"])]),
    # no cast: a float32 DeepSpeed config, a mixed Lightning precision, a user's own initialize()
    ("import deepspeed\ndeepspeed.initialize(model=Net(), config={'fp16': {'enabled': False}})\n", []),
    ("import lightning as L\nL.Trainer(precision='16-mixed').fit(Net())\n", []),
    ("def initialize(model, config):\n    pass\ninitialize(model=Net(), config={'fp16': {'enabled': True}})\n", []),
])
def test_handoffs_in_a_file_summary(source, expected):
    import ast

    from dtype_lint.project.summary import summarize_tree

    summary = summarize_tree(ast.parse(source), source)
    found = [(c["dtype"], c["trains"], c["refs"]) for c in summary["casts"] if "trains" in c]
    assert found == expected


def test_lightning_precision_from_an_argparse_flag_is_a_world():
    import ast

    from dtype_lint.project.summary import summarize_tree

    source = (
        "import argparse\nimport lightning as L\np = argparse.ArgumentParser()\n"
        "p.add_argument('--precision', default='32', choices=['32', 'bf16-true', '16-true'])\n"
        "args = p.parse_args()\nL.Trainer(precision=args.precision).fit(Net())\n"
    )
    (cast,) = [c for c in summarize_tree(ast.parse(source), source)["casts"] if "trains" in c]
    assert (cast["dtype"], cast["conditional"]) == ("fp16", True)
    assert cast["setting"] == "under Lightning's `precision=args.precision` (\"16-true\" on some runs)"

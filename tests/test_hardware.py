"""DTL709 fp16-on-cpu and the device facts it reads (dtype_lint.facts.devices)."""

import textwrap

import libcst as cst
import pytest

from dtype_lint.config import Settings
from dtype_lint.context import FileContext
from dtype_lint.engine import check_text
from dtype_lint.facts import devices
from dtype_lint.findings import Confidence


def dtl709(source: str) -> list[tuple[int, Confidence]]:
    report = check_text(textwrap.dedent(source), "infer.py", Settings(select=("DTL709",), min_confidence=Confidence.LOW))
    assert not report.internal_errors, report.internal_errors
    return [(f.line, f.confidence) for f in report.findings]


@pytest.mark.parametrize("expression, expected", [
    ('"cpu"', {"cpu"}),
    ('torch.device("cuda:0")', {"cuda"}),
    ('"cuda" if torch.cuda.is_available() else "cpu"', {"cuda", "cpu"}),
    ('"mps"', {"other"}),
    ("unknown_device", set()),
])
def test_device_choices_of_an_expression(expression, expected):
    text = f"import torch\nd = {expression}\n"
    ctx = FileContext("x.py", text, cst.parse_module(text))
    value = ctx.module.body[1].body[0].value
    assert devices.device_choices(ctx, value, ctx.module) == expected


def test_a_parameter_default_and_an_argparse_default_may_be_the_cpu():
    text = textwrap.dedent("""\
        import torch
        def run(model, device="cpu"):
            device = torch.device(device)
            model.to(device)
        parser.add_argument("--device", default="cpu")
        net.to(opt.device)
    """)
    ctx = FileContext("x.py", text, cst.parse_module(text))
    function = ctx.module.body[1]
    assert devices.placements(ctx, "model", function) == {"cpu", "other"}
    assert devices.placements(ctx, "net", ctx.module) == {"cpu", "other"}
    assert devices.placements(ctx, "other_model", ctx.module) is None


CHOSEN_DEVICE = """\
import torch
from transformers import AutoModelForCausalLM
device = "cuda" if torch.cuda.is_available() else "cpu"
model = AutoModelForCausalLM.from_pretrained("m", dtype={dtype})
model.to(device)
model.generate(ids)
"""


def test_fp16_load_moved_to_a_device_that_may_be_the_cpu():
    assert dtl709(CHOSEN_DEVICE.format(dtype="torch.float16")) == [(4, Confidence.MEDIUM)]


@pytest.mark.parametrize("dtype", [
    "torch.bfloat16",  # native on CPUs
    "torch.float32",
    "torch.float16 if device == 'cuda' else torch.float32",  # chosen from the device
])
def test_dtype_that_suits_the_cpu_is_clean(dtype):
    assert dtl709(CHOSEN_DEVICE.format(dtype=dtype)) == []


def test_half_moved_to_the_cpu_is_high_confidence():
    assert dtl709("import torch\nnet = torch.nn.Linear(2, 2).half()\nnet.cpu()\nnet(x)\n") == [(2, Confidence.HIGH)]


def test_helper_that_halves_the_model_is_reported_where_it_is_called():
    source = """\
    def to_fp16(model):
        model.half()
        return model
    def init(model, device="cpu", fp16=True):
        if fp16:
            to_fp16(model)
        model.to(device)
        return model
    """
    assert dtl709(source) == [(6, Confidence.MEDIUM)]


@pytest.mark.parametrize("guard", [
    "    half &= device != 'cpu'\n",
    "    half = half and torch.cuda.is_available()\n",
])
def test_a_flag_tied_to_the_device_is_clean(guard):
    source = (
        "import torch\ndef run(model, x, device='cpu', half=False):\n" + guard
        + "    model.to(device)\n    if half:\n        model.half()\n    return model(x)\n"
    )
    assert dtl709(source) == []
    assert dtl709(source.replace(guard, "")) == [(5, Confidence.MEDIUM)]


def test_a_file_that_never_places_its_model_runs_it_on_the_cpu():
    source = "import torch\nmodel = torch.hub.load('repo', 'net')\nmodel.half()\nmodel(frame)\nif __name__ == '__main__':\n    pass\n"
    assert dtl709(source) == [(3, Confidence.MEDIUM)]
    # ... in a script: a library's model may be placed by whoever imports it
    assert dtl709(source.replace("__main__", "__other__")) == []
    # ... but not when the code names a GPU anywhere (comments do not count).
    assert dtl709("# needs a GPU\n" + source) == [(4, Confidence.MEDIUM)]
    assert dtl709(source + "x = frame.cuda()\n") == []
    # nor when the half model is only built, never run
    assert dtl709(source.replace("model(frame)\n", "")) == []


@pytest.mark.parametrize("placement", [".cuda()", ".to('cuda')", ""])
def test_gpu_only_programs_are_clean(placement):
    source = "import torch\nassert torch.cuda.is_available()\nnet = torch.nn.Linear(2, 2).half()" + placement + "\nnet(x)\n"
    assert dtl709(source) == []

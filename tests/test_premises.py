"""Each API rule's premise, checked against the real torch the tests run (2.13, CPU) (issue 21):
what a rule says raises or warns does, what it says is silent is, and every replacement it
suggests runs. Where the premise holds only on older torch (DTL203), the test pins the torch
mechanism the rule's version gate rests on."""

from __future__ import annotations

import functools
import inspect
import json
import re
import types
import warnings

import pytest
import torch

from conftest import run_cli
from dtype_lint.config import Settings
from dtype_lint.engine import check_text
from dtype_lint.rules.deprecated_api import DEPRECATED as AMP_DEPRECATED
from dtype_lint.rules.deprecated_autocast_state import DEPRECATED as STATE_DEPRECATED

ON_2_4 = Settings(select=("DTL201", "DTL210"), target_torch="2.4")


def _findings(source: str, settings: Settings = ON_2_4):
    report = check_text(source, "train.py", settings)
    assert not report.internal_errors, report.internal_errors
    return report.findings


def _suggestion(message: str) -> str:
    """The replacement a message names: the backticked code after "use " or "construct it with "."""
    match = re.search(r"(?:use|construct it with) `([^`]+)`", message)
    assert match, message
    return match.group(1).replace(", ...)", ")")


def _run_quietly(function):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # a suggestion must not be deprecated itself
        warnings.filterwarnings("ignore", message=".*CUDA is not available.*")
        return function()


def _exercise(name: str, value) -> None:
    """Use a replacement as the old API was used: enter an autocast, build a scaler, decorate
    and call a custom autograd forward."""
    if name == "autocast":
        with value:
            pass
    elif name == "GradScaler":
        assert isinstance(value, torch.amp.GradScaler)
    else:
        forward = value(lambda ctx, x: x + 1)
        # what custom_fwd leaves on the context for custom_bwd
        ctx = types.SimpleNamespace(_fwd_used_autocast=False, _dtype=torch.float32)
        assert forward(ctx, 1) == 2


# -- DTL201 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("qualified", sorted(AMP_DEPRECATED))
def test_each_deprecated_amp_spelling_warns_on_this_torch(qualified):
    target = eval(qualified, {"torch": torch})
    with pytest.warns(FutureWarning, match="deprecated"):
        if qualified.endswith(("custom_fwd", "custom_bwd")):
            target(lambda ctx, x: x)
        elif "autocast" in qualified:
            with target():
                pass
        else:
            target()


USES = {
    # a call of the old API
    "call": "import torch\nx = torch.{device}.amp.{name}({args})\n",
    # a bare decorator
    "decorator": "import torch\n@torch.{device}.amp.{name}\ndef forward(ctx, x):\n    return x\n",
    # the API as a value, called elsewhere
    "value": "import torch\nmake = torch.{device}.amp.{name} if FLAG else None\n",
}


def _cases():
    for qualified, (device, name) in sorted(AMP_DEPRECATED.items()):
        if qualified.count(".") != 3:
            continue  # the module paths (torch.cuda.amp.autocast_mode.autocast) read the same
        for use in USES:
            if use == "decorator" and not name.startswith("custom_"):
                continue
            yield device, name, use


@pytest.mark.parametrize("device,name,use", list(_cases()))
def test_every_dtl201_suggestion_runs_on_this_torch(device, name, use):
    """The suggested spelling, evaluated and used the old way, runs (`torch.amp.custom_fwd` takes
    ``device_type`` as a keyword only: ``functools.partial(torch.amp.custom_fwd, "cuda")`` raised
    TypeError on main)."""
    args = "lambda ctx, x: x" if name.startswith("custom_") and use == "call" else ""
    source = USES[use].format(device=device, name=name, args=args)
    [finding] = _findings(source)
    suggestion = _suggestion(finding.message)
    value = _run_quietly(lambda: eval(suggestion, {"torch": torch, "functools": functools}))
    if use == "value":
        # the value stands for the old name: called the way the old name was
        value = _run_quietly(value) if name in ("autocast", "GradScaler") else value
    _run_quietly(lambda: _exercise(name, value))
    if use == "call" and name.startswith("custom_"):
        assert callable(value)


def test_the_value_replacement_of_custom_fwd_takes_cast_inputs_like_the_old_name():
    [finding] = _findings("import torch\nfwd = torch.cuda.amp.custom_fwd if F else None\n")
    decorator = eval(_suggestion(finding.message), {"torch": torch, "functools": functools})
    forward = decorator(cast_inputs=torch.float32)(lambda ctx, x: x)
    assert forward(types.SimpleNamespace(), 3) == 3


def test_the_subclass_suggestion_runs():
    [finding] = _findings("import torch\nclass Scaler(torch.cuda.amp.GradScaler):\n    pass\n")
    base = re.search(r"subclass `([^`]+)`", finding.message).group(1)
    construct = _suggestion(finding.message)
    scaler = _run_quietly(lambda: eval(construct, {"torch": torch}))
    assert base == "torch.amp.GradScaler" and isinstance(scaler, eval(base, {"torch": torch}))


def test_dtl201_fixes_give_code_that_runs_without_warnings():
    source = (
        "import torch\n"
        "scaler = torch.cuda.amp.GradScaler(enabled=False)\n"
        "with torch.cpu.amp.autocast(True, torch.bfloat16):\n"
        "    y = torch.ones(2) @ torch.ones(2)\n"
        "@torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\n"
        "def forward(ctx, x):\n"
        "    return x\n"
        "@torch.cuda.amp.custom_bwd\n"
        "def backward(ctx, g):\n"
        "    return g\n"
        "forward(type('C', (), {})(), 1)\n"
    )
    from dtype_lint.fixer import fix_text

    fixed = fix_text(source, "train.py", ON_2_4).text
    assert "torch.cuda.amp" not in fixed and "torch.cpu.amp" not in fixed
    _run_quietly(lambda: exec(compile(fixed, "fixed.py", "exec"), {}))


# -- DTL210 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("qualified", sorted(STATE_DEPRECATED))
def test_each_deprecated_autocast_state_function_warns_and_its_replacement_runs(qualified):
    replacement, device = STATE_DEPRECATED[qualified]
    old = eval(qualified, {"torch": torch})
    new = eval(replacement, {"torch": torch})
    setter = qualified.startswith("torch.set_")
    argument = () if not setter else ((torch.bfloat16,) if qualified.endswith("dtype") else (False,))
    saved = [(getattr(torch, "get_autocast_dtype")(d), torch.is_autocast_enabled(d)) for d in ("cpu", "cuda")]
    try:
        with pytest.warns(DeprecationWarning, match="deprecated"):
            old(*argument)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            new(device, *argument)
    finally:
        for d, (dtype, enabled) in zip(("cpu", "cuda"), saved):
            torch.set_autocast_dtype(d, dtype)
            torch.set_autocast_enabled(d, enabled)


# -- DTL701 ---------------------------------------------------------------------------------------
def test_legacy_tf32_flags_do_not_warn_and_a_legacy_read_after_the_new_api_raises():
    """Why DTL701 is silent unless the project can move (nothing warns today) or mixes the APIs
    (a read of the legacy flag after an fp32_precision write raises)."""
    matmul = torch.backends.cuda.matmul
    before = (matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            assert matmul.allow_tf32 is True
            matmul.allow_tf32 = False
        matmul.fp32_precision = "tf32"  # disagrees with the legacy flag's False
        with pytest.raises(RuntimeError, match="mix of the legacy and new APIs"):
            _ = matmul.allow_tf32
    finally:
        matmul.fp32_precision = "none"
        matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def test_dtl701_suggested_settings_exist_and_read_back():
    """Each spelling DTL701 suggests (and its fix writes) is a setting of this torch."""
    [finding] = _findings("import torch\ntorch.backends.cudnn.allow_tf32 = False\n",
                          Settings(select=("DTL701",), target_torch="2.9"))
    spelled = re.findall(r"`([^`]+) = \"(\w+)\"`", finding.message)
    assert [name for name, _ in spelled] == ["torch.backends.cudnn.conv.fp32_precision",
                                             "torch.backends.cudnn.rnn.fp32_precision"]
    for name, value in spelled:
        owner, _, attribute = name.rpartition(".")
        backend = eval(owner, {"torch": torch})
        saved = getattr(backend, attribute)
        try:
            setattr(backend, attribute, value)
            assert getattr(backend, attribute) == value
        finally:
            setattr(backend, attribute, saved)


# -- DTL203 ---------------------------------------------------------------------------------------
def test_cuda_autocast_refuses_bf16_exactly_when_is_bf16_supported_says_no(monkeypatch):
    """DTL203's premise on torch < 2.3: CUDA autocast raises when `is_bf16_supported()` is False,
    which it was on every pre-Ampere GPU until torch 2.3 (pytorch/pytorch#124996: False on a V100
    with 2.2.2). Since 2.3 the function counts emulation (``including_emulation=True`` by default)
    and answers True there: the rule's version gate."""
    assert inspect.signature(torch.cuda.is_bf16_supported).parameters["including_emulation"].default is True
    monkeypatch.setattr(torch.cuda.amp.common, "amp_definitely_not_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: False)
    with pytest.raises(RuntimeError, match="does not support bfloat16"):
        torch.autocast("cuda", dtype=torch.bfloat16)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    torch.autocast("cuda", dtype=torch.bfloat16)  # accepted: emulated bf16 counts


BF16_AUTOCAST = "import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n"


@pytest.mark.parametrize("target,reported", [("2.1", True), ("2.2.2", True), ("2.3", False), ("2.7", False),
                                             (None, False)])
def test_dtl203_reports_only_projects_that_support_torch_before_2_3(target, reported):
    findings = _findings(BF16_AUTOCAST, Settings(select=("DTL203",), target_torch=target))
    assert bool(findings) is reported
    if findings:
        assert "float32" in findings[0].message and "fp16 + GradScaler" not in findings[0].message


@pytest.mark.parametrize("requirement,flag,reported", [
    ("torch>=1.13", None, False),  # users install the newest torch, which emulates bf16
    ("torch", None, False),
    ("torch>=1.13,<2.3", None, True),  # every torch it admits refuses bf16 on a pre-Ampere GPU
    ("torch==2.1.2", None, True),
    ("torch~=2.2.0", None, True),
    ("torch>=1.13,<2.4", None, False),
    ("torch>=1.13", "2.1", True),  # the configured torch is the one checked
    ("torch==2.1.2", "2.4", False),
])
def test_dtl203_asks_the_newest_torch_the_project_admits_not_its_floor(tmp_path, requirement, flag, reported):
    (tmp_path / "requirements.txt").write_text(requirement + "\n")
    (tmp_path / "train.py").write_text(BF16_AUTOCAST)
    flags = ("--target-torch", flag) if flag else ()
    result = run_cli("check", "--no-cache", "--select", "DTL203", "--format", "json", *flags, "train.py", cwd=tmp_path)
    findings = json.loads(result.stdout)
    assert [f["line"] for f in findings] == ([2] if reported else []), result.stderr
    if reported and flag is None:
        assert f"this project admits only torch `{requirement[5:]}`" in findings[0]["message"]


def test_dtl203_leaves_fp8_training_alone_it_runs_only_on_gpus_with_bf16():
    """Lightning's fp8 examples (torchao.float8) need Ada/Hopper GPUs: bf16 is always there."""
    source = ("import lightning as L\nfrom torchao.float8 import convert_to_float8_training\n"
              "fabric = L.Fabric(precision='bf16-true')\n")
    assert _findings(source, Settings(select=("DTL203",), target_torch="2.1")) == []
    assert len(_findings(source.replace("torchao.float8", "mylib"), Settings(select=("DTL203",), target_torch="2.1"))) == 1

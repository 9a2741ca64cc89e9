"""torch's dtype semantics as data (dtype_lint/facts/semantics.py, tools/gen_torch_semantics.py).

Three kinds of test: the loader's answers on hand-written data (no torch), the shipped file's
answers against a live torch 2.13 computed directly here, and a seeded sample of the shipped
entries re-derived by the generator from the installed torch (an entry edited by hand, or a
torch that changed under the file, fails)."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch  # the test extra installs it: a missing torch fails here, loudly
import torch.nn.functional as F

from dtype_lint.facts import semantics
from dtype_lint.facts.semantics import SCALAR_FLOAT, SCALAR_INT

ROOT = Path(__file__).resolve().parent.parent
DATA = semantics.load("2.13")
CODE = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
        torch.int64: "int", torch.bool: "bool"}


def _error(call) -> str:
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)) as raised:
        call()
    return str(raised.value).strip().splitlines()[0]


# -- the loader, on data written here -----------------------------------------------------------
TINY = {
    "torch": "2.13.0",
    "promotion": {
        "tensor": {f"{a}+{b}": (a if a == b else "fp32") for a in ("fp32", "fp16", "bf16") for b in ("fp32", "fp16", "bf16")},
        "scalar": {"fp16+float": "fp16", "int+float": "fp32"},
    },
    "ops": {
        "torch.mm": {"out": "same", "mix": "raise", "err": 0, "nok": {"cpu": ["bool"]}, "amp": {"cuda": "lower"}},
        "torch.add": {"out": "same", "mix": "promote"},
        "torch.exp": {"out": "float", "range": {"fp16": ["overflow", 16.0]}, "amp": {"cuda": "fp32"}},
        "torch.zeros": {"out": "default", "kw": "dtype"},
        "Tensor.to": {"out": "arg", "kw": "dtype"},
        "torch.nn.Linear": {"out": "module", "module": True, "mix": "raise", "err": 0},
        "torch.nn.ReLU": {"out": "same", "module": True},
    },
    "aliases": {"torch.nn.modules.linear.Linear": "torch.nn.Linear"},
    "catalogue": {"dtype:fp16": ["torch.float16"], "nontensor": ["torch.cuda.is_available"], "tensor": ["torch.mystery"]},
    "messages": ["expected m1 and m2 to have the same dtype"],
}


@pytest.fixture()
def tiny(tmp_path):
    path = tmp_path / "torch_semantics_2.13.json"
    path.write_text(json.dumps(TINY))
    return semantics.Semantics(TINY, path)


def test_output_rules(tiny):
    assert tiny.output_dtype("torch.add", ["fp16", "fp32"]) == "fp32"
    assert tiny.output_dtype("torch.add", ["fp16", SCALAR_FLOAT]) == "fp16"  # a Python float keeps fp16
    assert tiny.output_dtype("torch.exp", ["fp16"]) == "fp16"
    assert tiny.output_dtype("torch.exp", ["int"]) == "fp32"
    assert tiny.output_dtype("torch.exp", ["int"], default_float="fp64") == "fp64"
    assert tiny.output_dtype("torch.zeros", []) == "fp32"
    assert tiny.output_dtype("torch.zeros", [], {"dtype": "bf16"}) == "bf16"
    assert tiny.output_dtype("Tensor.to", ["fp32"], {"dtype": "fp16"}) == "fp16"
    assert tiny.output_dtype("Tensor.to", ["fp32", "bf16"]) == "bf16"  # x.to(other)
    assert tiny.output_dtype("torch.torch.Tensor.nothing", ["fp16"]) is None


def test_unknown_stays_unknown(tiny):
    assert tiny.output_dtype("torch.add", ["fp16", None]) is None
    assert tiny.output_dtype("torch.not_there", ["fp16"]) is None
    assert tiny.output_dtype("torch.zeros", [], {"dtype": None}) is None  # dtype= given, value unknown
    assert tiny.raises("torch.mm", ["fp16", None]) is None
    assert tiny.kernel_missing("torch.mm", "fp16", "cuda") is None  # the device is not recorded
    assert tiny.autocast_policy("torch.add") is None


def test_mixes_and_modules(tiny):
    assert tiny.output_dtype("torch.mm", ["fp16", "fp32"]) is None
    assert tiny.raises("torch.mm", ["fp16", "fp32"]) == "expected m1 and m2 to have the same dtype"
    assert tiny.raises("torch.mm", ["fp16", "fp16"]) is None
    assert tiny.raises("torch.add", ["fp16", "fp32"]) is None
    assert tiny.output_dtype("torch.nn.Linear", ["fp16"], module="fp16") == "fp16"
    assert tiny.output_dtype("torch.nn.modules.linear.Linear", ["fp16"], module="fp16") == "fp16"
    assert tiny.output_dtype("torch.nn.Linear", ["fp16"], module="fp32") is None
    assert tiny.raises("torch.nn.Linear", ["fp16"], module="fp32") == "expected m1 and m2 to have the same dtype"
    assert tiny.output_dtype("torch.nn.ReLU", ["bf16"]) == "bf16"


def test_facts_and_names(tiny):
    assert tiny.kernel_missing("torch.mm", "bool", "cpu") is True
    assert tiny.kernel_missing("torch.mm", "fp16", "cpu") is False
    assert tiny.autocast_policy("torch.mm") == "lower"
    fact = tiny.range_sensitive("torch.exp", "fp16")
    assert (fact.how, fact.scale, fact.autocast) == ("overflow", 16.0, True)
    assert tiny.range_sensitive("torch.exp", "bf16").how is None  # only autocast's float32 list
    assert tiny.range_sensitive("torch.add") is None
    assert tiny.kind("torch.float16") == "dtype" and tiny.dtype_constant("torch.float16") == "fp16"
    assert tiny.describes("torch.cuda.is_available") and tiny.describes("torch.nn.Linear")
    assert tiny.has("torch.mystery") and not tiny.describes("torch.mystery")


def test_version_choice(tmp_path, monkeypatch):
    for version in ("2.10", "2.13"):
        (tmp_path / f"torch_semantics_{version}.json").write_text("{}")
    monkeypatch.setattr(semantics, "DATA_DIR", tmp_path)
    assert semantics.path_for(None).name == "torch_semantics_2.13.json"  # the newest
    assert semantics.path_for("2.13").name == "torch_semantics_2.13.json"
    assert semantics.path_for("2.12").name == "torch_semantics_2.10.json"  # the nearest lower
    assert semantics.path_for("2.20.1").name == "torch_semantics_2.13.json"
    assert semantics.path_for("2.4").name == "torch_semantics_2.10.json"  # older than all: the oldest


def test_loading_never_imports_torch():
    code = ("import sys; from dtype_lint.facts import semantics; d = semantics.load(); "
            "assert d.output_dtype('torch.exp', ['fp16']) == 'fp16'; assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_shipped_file_is_compact_and_for_2_13():
    path = semantics.path_for("2.13")
    assert path.name == "torch_semantics_2.13.json"
    assert path.stat().st_size < 2_000_000
    assert DATA.torch_version.startswith("2.13")


# -- the shipped data against a live torch ---------------------------------------------------------
def test_where_with_python_floats_is_the_default_dtype():
    cond = torch.rand(3) > 0.5
    live = CODE[torch.where(cond, 1.0, 0.0).dtype]
    assert DATA.output_dtype("torch.where", ["bool", SCALAR_FLOAT, SCALAR_FLOAT]) == live == "fp32"
    half = torch.rand(3).half()
    assert DATA.output_dtype("torch.where", ["bool", "fp16", SCALAR_FLOAT]) == CODE[torch.where(cond, half, 0.0).dtype]


def test_dropout_and_sum_keep_half():
    x = torch.rand(2, 4).half()
    assert DATA.output_dtype("torch.nn.Dropout", ["fp16"]) == CODE[torch.nn.Dropout()(x).dtype] == "fp16"
    assert DATA.output_dtype("Tensor.sum", ["fp16"]) == CODE[x.sum(dim=1).dtype] == "fp16"
    assert DATA.output_dtype("Tensor.sum", ["bool"]) == CODE[(x > 0).sum().dtype] == "int"
    assert DATA.output_dtype("Tensor.sum", ["fp16"], {"dtype": "fp32"}) == CODE[x.sum(dtype=torch.float32).dtype]


def test_factory_takes_the_dtype_argument():
    param = torch.nn.Parameter(torch.rand(3).half())
    assert DATA.output_dtype("torch.zeros", [], {"dtype": "fp16"}) == CODE[torch.zeros(2, dtype=param.dtype).dtype]
    assert DATA.output_dtype("torch.zeros", []) == CODE[torch.zeros(2).dtype]
    assert DATA.output_dtype("torch.arange", [SCALAR_INT]) == CODE[torch.arange(3).dtype] == "int"
    assert DATA.output_dtype("torch.arange", [SCALAR_FLOAT]) == CODE[torch.arange(3.0).dtype] == "fp32"


def test_default_dtype_follows_set_default_dtype():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        live = CODE[torch.exp(torch.arange(3)).dtype]
    finally:
        torch.set_default_dtype(previous)
    assert DATA.output_dtype("torch.exp", ["int"], default_float="fp64") == live == "fp64"


@pytest.mark.parametrize("op, calls", [
    ("torch.matmul", [lambda: torch.matmul(torch.rand(2, 2).half(), torch.rand(2, 2))]),
    ("torch.mm", [lambda: torch.mm(torch.rand(2, 2).half(), torch.rand(2, 2))]),
    # op_db's sample may or may not pass a bias: the addmm path says it otherwise
    ("torch.nn.functional.linear", [lambda: F.linear(torch.rand(2, 2).half(), torch.rand(2, 2)),
                                    lambda: F.linear(torch.rand(2, 2).half(), torch.rand(2, 2), torch.rand(2))]),
    ("Tensor.index_put", [lambda: torch.rand(3).index_put((torch.tensor([0]),), torch.rand(1).half())]),
])
def test_mixed_half_and_float_raise_with_torchs_message(op, calls):
    assert DATA.output_dtype(op, ["fp16", "fp32"]) is None
    message = DATA.raises(op, ["fp16", "fp32"])
    assert message is not None
    # the same sentence as torch's (the dtype names may come in the other order)
    assert any(_error(call).split(",")[0].split(":")[0] in message for call in calls), message


def test_module_mismatch_raises():
    linear = torch.nn.Linear(4, 4)
    live = _error(lambda: linear(torch.rand(2, 4).half()))
    message = DATA.raises("torch.nn.Linear", ["fp16"], module="fp32")
    assert message is not None and live.split(",")[0] in message
    assert DATA.output_dtype("torch.nn.Linear", ["fp16"], module="fp16") == CODE[linear.half()(torch.rand(2, 4).half()).dtype]


def test_kernels_that_work_on_2_13_cpu():
    x = torch.rand(1, 1, 4, 4)
    x.half().sum()  # CPU Half sum: runs
    F.interpolate(x.bfloat16(), scale_factor=2, mode="nearest")  # bfloat16 nearest: runs
    assert DATA.kernel_missing("torch.sum", "fp16", "cpu") is False
    assert DATA.kernel_missing("Tensor.sum", "fp16", "cpu") is False
    assert DATA.kernel_missing("torch.nn.functional.interpolate", "bf16", "cpu") is False


@pytest.mark.parametrize("op, call", [
    ("torch.linalg.svd", lambda d: torch.linalg.svd(torch.eye(4, dtype=d))),
    ("torch.linalg.inv", lambda d: torch.linalg.inv(torch.eye(4, dtype=d))),
    ("torch.fft.rfft", lambda d: torch.fft.rfft(torch.rand(8).to(d))),
    ("torch.quantile", lambda d: torch.quantile(torch.rand(8).to(d), 0.5)),
])
def test_kernels_missing_on_cpu(op, call):
    for dtype, code in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
        live = _error(lambda: call(dtype))
        assert DATA.kernel_missing(op, code, "cpu") is True, (op, code, live)
    assert DATA.kernel_error(op)


def test_promotion_table_is_torchs():
    for a, da in CODE.items():
        for b, db in CODE.items():
            assert DATA.promote(da, db) == CODE.get(torch.promote_types(a, b), str(torch.promote_types(a, b))), (da, db)


def test_cpu_autocast_policies():
    x = torch.rand(4, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert CODE[torch.mm(x, x).dtype] == "bf16"
        assert CODE[F.linear(x, x).dtype] == "bf16"
    assert DATA.autocast_policy("torch.mm", "cpu") == "lower"
    assert DATA.autocast_policy("torch.nn.functional.linear", "cpu") == "lower"
    assert DATA.autocast_policy("torch.nn.Linear", "cpu") == "lower"


def test_cuda_autocast_policies_match_the_documented_lists():
    assert DATA.autocast_policy("torch.matmul") == "lower"
    assert DATA.autocast_policy("torch.nn.Conv2d") == "lower"
    assert DATA.autocast_policy("torch.softmax") == "fp32"
    assert DATA.autocast_policy("Tensor.sum") == "fp32"
    assert DATA.autocast_policy("torch.nn.functional.layer_norm") == "fp32"
    assert DATA.autocast_policy("torch.addcmul") == "promote"
    assert DATA.autocast_policy("torch.relu") is None


def test_exp_overflows_half():
    assert not torch.isfinite(torch.exp(torch.full((2,), 12.0).half())).all()
    fact = DATA.range_sensitive("torch.exp", "fp16")
    assert fact is not None and fact.how == "overflow" and fact.autocast


def test_angles_lose_their_phase_in_low_precision():
    """The ``rounding`` fact against a live torch: an angle rounded to bfloat16/float16 (positions
    x frequencies) moves cos by far more than the tolerance; mul keeps the relative error."""
    angles = torch.outer(torch.arange(4096.0), 1.0 / 10000 ** (torch.arange(0, 64, 2).float() / 64))
    for code, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        error = float((angles.to(dtype).float().cos() - angles.cos()).abs().max())
        assert error > 0.5, code  # the phase is gone at 4096 positions (bfloat16 2.0, float16 0.96)
        scale = DATA.rounding_scale("torch.cos", code)
        assert scale is not None and scale <= 256
        assert DATA.rounding_scale("Tensor.sin", code) == DATA.rounding_scale("torch.sin", code)
    rotations = torch.polar(torch.ones(2), torch.tensor([4095.0, 4097.0]).bfloat16().float())
    assert bool(rotations[0] == rotations[1])  # two positions, one rotation
    assert DATA.rounding_scale("torch.polar", "bf16") is not None
    assert DATA.rounding_scale("torch.mul", "bf16") is None and DATA.rounding_scale("torch.add", "fp16") is None
    # autocast on CUDA runs the angle's matmul/einsum in the low dtype, not outer or mul
    assert DATA.autocast_policy("torch.einsum") == DATA.autocast_policy("Tensor.__matmul__") == "lower"
    assert DATA.autocast_policy("torch.outer") is None and DATA.autocast_policy("torch.mul") is None


def test_dtype_constants():
    for name in ("torch.float16", "torch.half", "torch.bfloat16", "torch.float32", "torch.float64", "torch.long"):
        dtype = getattr(torch, name.split(".", 1)[1])
        assert DATA.dtype_constant(name) == CODE.get(dtype, str(dtype)), name


# -- a seeded sample, re-derived by the generator ------------------------------------------------
def _generator():
    spec = importlib.util.spec_from_file_location("gen_torch_semantics", ROOT / "tools" / "gen_torch_semantics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _comparable(entry: dict, messages: list[str]) -> dict:
    found = {k: v for k, v in entry.items() if k not in ("err", "nok_err", "amp_err", "range")}
    for key in ("err", "nok_err", "amp_err"):
        if key in entry:
            found[key] = messages[entry[key]] if isinstance(entry[key], int) else entry[key]
    if "range" in entry:  # the verdicts; the scale where they first show is a detail
        found["range"] = {dtype: seen[0] for dtype, seen in entry["range"].items()}
    return found


def test_a_seeded_sample_regenerates_identically():
    raw = json.loads(semantics.path_for("2.13").read_text())
    candidates = sorted(name for name, entry in raw["ops"].items() if entry.get("out") is not None)
    sample = random.Random(2013).sample(candidates, 24)
    fresh = _generator().build(set(sample))
    for name in sample:
        assert name in fresh["ops"], name
        assert _comparable(fresh["ops"][name], fresh["messages"]) == _comparable(raw["ops"][name], raw["messages"]), name


@pytest.mark.parametrize("op, call, complex_result", [
    ("torch.polar", lambda: torch.polar(torch.ones(4), torch.rand(4)), True),
    ("torch.view_as_complex", lambda: torch.view_as_complex(torch.rand(4, 2)), True),
    ("torch.complex", lambda: torch.complex(torch.rand(4), torch.rand(4)), True),
    ("torch.fft.rfft", lambda: torch.fft.rfft(torch.rand(8)), True),
    ("torch.fft.ifft", lambda: torch.fft.ifft(torch.rand(8)), False),  # complex, left out on purpose
    ("torch.outer", lambda: torch.outer(torch.rand(4), torch.rand(4)), False),
    ("Tensor.abs", lambda: torch.view_as_complex(torch.rand(4, 2)).abs(), False),
])
def test_complex_results_match_live_torch(op, call, complex_result):
    """DTL512's complex ops come from the data's output dtypes; a sample checked against torch."""
    import warnings

    from dtype_lint.facts.complex_values import complex_op

    live = call()
    assert complex_op(DATA, op) is complex_result
    if complex_result:
        assert live.dtype.is_complex
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch warns once per process
            assert torch.equal(live.float(), live.real.float())  # the imaginary part is gone
    elif op != "torch.fft.ifft":
        assert not live.dtype.is_complex


def test_device_gaps_match_torchs_op_database():
    """MPS has no float64 at all: no op of op_db claims it there (the generator's ``devices``);
    CPU and CUDA are asked per op, and a device the data does not list is unknown."""
    from torch.testing._internal.common_methods_invocations import op_db

    claimed = set().union(*(op.supported_dtypes("mps") for op in op_db))
    assert torch.float64 not in claimed and torch.float32 in claimed and torch.float16 in claimed
    assert DATA.device_lacks("fp64", "mps") is True
    assert DATA.device_lacks("fp32", "mps") is False and DATA.device_lacks("fp16", "mps") is False
    assert DATA.device_lacks("fp64", "npu") is None and DATA.device_lacks("fp64", "cuda") is None

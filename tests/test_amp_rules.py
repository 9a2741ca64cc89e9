"""The AMP-protocol rules beyond their inline examples: import spellings, the scaler facts they
share, precision cases that must stay silent, and their fixes applied by the real CLI and run
under torch on CPU."""

import re
import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from dtype_lint.config import Settings
from dtype_lint.context import FileContext
from dtype_lint.engine import check_text
from dtype_lint.facts.scaler import Kind
from dtype_lint.findings import Confidence


def found(source: str, *codes: str, **targets: str) -> list[tuple[str, int]]:
    settings = Settings(select=codes, min_confidence=Confidence.LOW, **targets)
    report = check_text(textwrap.dedent(source), "train.py", settings)
    assert not report.internal_errors, report.internal_errors
    return [(f.code, f.line) for f in report.findings]


def facts_of(source: str):
    text = textwrap.dedent(source)
    return FileContext("train.py", text, cst.parse_module(text)).scaler


# -- import spellings ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "imports, autocast",
    [
        ("import torch as T", "T.autocast('cuda')"),
        ("import torch as T", "T.cuda.amp.autocast()"),
        ("from torch.cuda.amp import autocast as ac", "ac()"),
        ("from torch.cuda import amp", "amp.autocast(dtype=torch.float16)"),
        ("from torch import autocast", "autocast(device_type='cuda', dtype=torch.bfloat16)"),
        ("import torch.amp", "torch.amp.autocast('cuda')"),
    ],
)
def test_backward_in_autocast_through_every_import_spelling(imports, autocast):
    source = f"import torch\n{imports}\nwith {autocast}:\n    loss = model(x)\n    loss.backward()\n"
    assert found(source, "DTL204") == [("DTL204", 5)]


def test_autocast_spelled_by_an_unrelated_module_is_not_autocast():
    source = "from mylib import autocast\nwith autocast():\n    loss = model(x)\n    loss.backward()\n"
    assert found(source, "DTL204") == []


@pytest.mark.parametrize(
    "imports, call",
    [
        ("import torch.nn.functional as F", "F.binary_cross_entropy(p, y)"),
        ("from torch.nn import functional as fn", "fn.binary_cross_entropy(p, y)"),
        ("import torch as T", "T.nn.functional.binary_cross_entropy(p, y)"),
        ("from torch import nn", "nn.BCELoss()(p, y)"),
    ],
)
def test_bce_through_every_import_spelling(imports, call):
    source = f"import torch\n{imports}\nwith torch.autocast('cuda'):\n    loss = {call}\n"
    assert found(source, "DTL207") == [("DTL207", 4)]


def test_clip_imported_under_an_alias_is_still_a_clip():
    source = """\
        from torch.nn.utils import clip_grad_norm_ as clip
        for x in loader:
            scaler.scale(model(x)).backward()
            clip(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
        """
    assert found(source, "DTL303") == [("DTL303", 4)]


def test_tf32_flags_through_submodule_imports():
    source = """\
        from torch.backends import cudnn
        import torch.backends.cuda as tbc
        cudnn.allow_tf32 = True
        tbc.matmul.allow_tf32 = False
        """
    assert found(source, "DTL701", target_torch="2.9") == [("DTL701", 3), ("DTL701", 4)]


def test_anomaly_and_default_dtype_through_from_imports():
    source = """\
        from torch.autograd import set_detect_anomaly
        from torch import set_default_dtype, float16
        set_detect_anomaly(True)
        set_default_dtype(float16)
        """
    assert found(source, "DTL705", "DTL702") == [("DTL705", 3), ("DTL702", 4)]


# -- the scaler facts ------------------------------------------------------------------------------
NANOGPT = """\
    import torch
    scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
    optimizer = model.configure_optimizers()
    while True:
        for micro_step in range(accum):
            with ctx:
                loss = model(X, Y)
            scaler.scale(loss).backward()
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        else:
            optimizer.step()
        scaler.step(optimizer)
        scaler.update()
        lr_scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    """


def test_scaler_facts_list_the_protocol_in_source_order():
    facts = facts_of(NANOGPT)
    kinds = [(event.kind, event.scaler, event.optimizer) for event in facts.events]
    assert kinds == [
        (Kind.SCALED_BACKWARD, "scaler", None),
        (Kind.UNSCALE, "scaler", "optimizer"),
        (Kind.CLIP, None, None),
        (Kind.OPTIMIZER_STEP, None, "optimizer"),
        (Kind.STEP, "scaler", "optimizer"),
        (Kind.UPDATE, "scaler", None),
        (Kind.OPTIMIZER_STEP, None, "lr_scheduler"),
        (Kind.ZERO_GRAD, None, "optimizer"),
    ]


def test_scaler_facts_structure_branches_loops_and_bindings():
    facts = facts_of(NANOGPT)
    backward, unscale, clip, plain_step, step, *_ = facts.events
    assert facts.exclusive(unscale, plain_step) and facts.exclusive(clip, plain_step)
    assert not facts.exclusive(unscale, clip) and not facts.exclusive(backward, step)
    loop = step.loop
    assert facts.repeated(backward, loop) and not facts.repeated(step, loop)
    assert facts.iteration(step) == facts.events  # the micro-step loop belongs to the iteration
    assert facts.binding("scaler").line == 2 and facts.binding("scaler").enabled is None
    assert facts.describe("scaler") == "`scaler` (GradScaler line 2)"
    assert facts.guarded_optimizers("scaler") == ("optimizer",)
    assert facts.is_optimizer("optimizer") and not facts.is_optimizer("lr_scheduler")
    assert facts.is_optimizer("self.optimizerD") and facts.is_optimizer("opt_g") and not facts.is_optimizer("options")


def test_scaler_facts_tell_scalers_from_other_scalers():
    facts = facts_of(
        """\
        from sklearn.preprocessing import StandardScaler
        import torch
        feature_scaler = StandardScaler()
        amp = torch.amp.GradScaler("cuda", enabled=False)
        """
    )
    assert not facts.is_scaler("feature_scaler")
    assert facts.is_scaler("amp") and facts.is_disabled("amp")
    assert facts.is_scaler("self.grad_scaler")  # a parameter or attribute named like one
    assert facts.scalers() == ("amp",)


def test_a_scaled_loss_kept_in_a_variable_is_a_scaled_backward():
    source = """\
        def step(model, x, scaler, optimizer):
            scaled = scaler.scale(model(x))
            scaled.backward()
            optimizer.step()
        """
    assert [e.kind for e in facts_of(source).events][:1] == [Kind.SCALED_BACKWARD]
    assert found(source, "DTL304", "DTL305") == [("DTL305", 4)]


def test_step_without_scale_is_silent_when_the_module_scales_elsewhere():
    source = """\
        import torch
        scaler = torch.amp.GradScaler("cuda")
        loss.backward()
        scaler.step(optimizer)
        scaled = scaler.scale(other_loss)
        """
    assert found(source, "DTL304") == []


def test_bce_under_cpu_autocast_is_only_low_confidence():
    source = """\
        import torch
        import torch.nn.functional as F
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.binary_cross_entropy(torch.sigmoid(model(x)), y)
        """
    report = check_text(textwrap.dedent(source), "t.py", Settings(select=("DTL207",), min_confidence=Confidence.LOW))
    assert [(f.line, f.confidence) for f in report.findings] == [(4, Confidence.LOW)]
    assert check_text(textwrap.dedent(source), "t.py", Settings(select=("DTL207",))).findings == []


def test_scaler_facts_are_computed_once_per_file():
    text = textwrap.dedent(NANOGPT)
    ctx = FileContext("train.py", text, cst.parse_module(text))
    assert ctx.scaler is ctx.scaler


# -- precision: what must stay silent --------------------------------------------------------------
def test_branches_for_amp_and_fp32_are_not_combined():
    source = """\
        for batch in loader:
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
        """
    assert found("import torch\n" + textwrap.dedent(source), "DTL303", "DTL304", "DTL305") == []


def test_helper_without_unscale_is_left_alone_when_a_caller_may_unscale():
    source = """\
        import torch
        def clip_and_step(model, scaler, opt):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
        def train(model, scaler, opt):
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.unscale_(opt)
                clip_and_step(model, scaler, opt)
        """
    assert found(source, "DTL303") == []


def test_scaler_named_parameter_in_a_helper_is_understood():
    source = """\
        def train_one_epoch(model, loader, optimizer, grad_scaler):
            for x, y in loader:
                grad_scaler.scale(model(x, y)).backward()
                optimizer.step()
                grad_scaler.update()
        """
    assert found(source, "DTL305") == [("DTL305", 4)]


def test_gan_with_two_optimizers_both_stepped_by_the_scaler_is_clean():
    source = """\
        for real in loader:
            scaler.scale(loss_d).backward()
            scaler.step(opt_d)
            scaler.scale(loss_g).backward()
            scaler.step(opt_g)
            scaler.update()
            sched_d.step()
            sched_g.step()
        """
    assert found(source, "DTL303", "DTL304", "DTL305") == []


def test_backward_in_a_nested_function_inside_autocast_is_not_in_autocast():
    source = """\
        import torch
        with torch.autocast("cuda"):
            def closure():
                optimizer.zero_grad()
                loss = model(x)
                loss.backward()
                return loss
        optimizer.step(closure)
        """
    assert found(source, "DTL204") == []


def test_deepspeed_engine_backward_is_not_a_tensor_backward():
    source = """\
        import torch
        with torch.autocast("cuda"):
            loss = model_engine(x)
            model_engine.backward(loss)
        """
    assert found(source, "DTL204") == []


def test_bce_name_rebound_to_a_logits_loss_is_not_trusted():
    source = """\
        import torch
        from torch import nn
        crit = nn.BCELoss()
        if use_logits:
            crit = nn.BCEWithLogitsLoss()
        with torch.autocast("cuda"):
            loss = crit(model(x), y)
        """
    assert found(source, "DTL207") == []


def test_timm_style_autocast_partial_counts_as_autocast():
    source = """\
        from functools import partial
        import torch
        amp_autocast = partial(torch.autocast, device_type="cuda", dtype=torch.float16)
        with amp_autocast():
            loss = loss_fn(model(x), y)
            loss.backward()
        """
    assert found(source, "DTL204") == [("DTL204", 6)]


def test_anomaly_under_debug_guards_and_in_tests_is_fine():
    source = """\
        import torch
        if args.debug:
            torch.autograd.set_detect_anomaly(True)
        def check_gradients(model):
            with torch.autograd.detect_anomaly():
                model(x).sum().backward()
        """
    assert found(source, "DTL705") == []


# -- fixes -----------------------------------------------------------------------------------------
def _fix(tmp_path, name: str, source: str, select: str = "DTL2,DTL3,DTL7") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "dtype_lint", "fix", "--unsafe-fixes", "--no-cache", "--select", select, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode in (0, 1), result.stderr
    return path.read_text(encoding="utf-8")


def test_backward_dedent_fix_keeps_the_forward_inside_and_moves_the_tail(tmp_path):
    fixed = _fix(
        tmp_path,
        "loop.py",
        """\
        import torch
        for step, batch in enumerate(loader):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(**batch).loss / accum
                # scaled backward
                scaler.scale(loss).backward()
                if (step + 1) % accum == 0:
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad()
        """,
    )
    assert fixed == textwrap.dedent(
        """\
        import torch
        for step, batch in enumerate(loader):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(**batch).loss / accum
            # scaled backward
            scaler.scale(loss).backward()
            if (step + 1) % accum == 0:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
        """
    )
    assert found(fixed, "DTL204") == []


def test_backward_followed_by_other_work_gets_no_dedent_fix():
    source = """\
        import torch
        with torch.autocast("cuda"):
            loss = model(x)
            loss.backward()
            total += loss.item()
        """
    report = check_text(textwrap.dedent(source), "t.py", Settings(select=("DTL204",)))
    assert [f.fix for f in report.findings] == [None]


def test_tf32_fix_is_withheld_while_a_legacy_read_remains():
    source = """\
        import torch
        torch.backends.cuda.matmul.allow_tf32 = True
        print("tf32:", torch.backends.cuda.matmul.allow_tf32)
        """
    report = check_text(textwrap.dedent(source), "t.py", Settings(select=("DTL701",), target_torch="2.9"))
    assert [(f.line, f.fix) for f in report.findings] == [(2, None)]


TRAIN_CPU = """\
    import torch
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    for step in range(3):
        with torch.autocast("cpu", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        print("NORM", float(norm))
        optimizer.step()
        optimizer.zero_grad()
    print("WEIGHT", float(model.weight.abs().max()))
    """


def _run(path) -> dict[str, float]:
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    values: dict[str, float] = {}
    for line in result.stdout.splitlines():
        key, value = line.split()
        values[key] = float(value)  # the last iteration's value
    return values


def test_scaler_fixes_make_a_cpu_training_loop_clip_true_gradients(tmp_path):
    """DTL305 then DTL303 (the fix command runs to a fixed point): before, the clip sees the
    gradient norm times the loss scale; after, it sees the true norm."""
    import torch  # the test extra installs it: a missing torch fails here, loudly
    assert torch.__version__
    script = tmp_path / "train_cpu.py"
    script.write_text(textwrap.dedent(TRAIN_CPU), encoding="utf-8")
    before = _run(script)
    fixed = _fix(tmp_path, "train_cpu.py", TRAIN_CPU, select="DTL303,DTL305")
    assert "scaler.step(optimizer)" in fixed and "scaler.update()" in fixed
    assert fixed.index("scaler.unscale_(optimizer)") < fixed.index("clip_grad_norm_")
    assert found(fixed, "DTL303", "DTL304", "DTL305") == []
    after = _run(script)
    assert before["NORM"] == pytest.approx(1024 * after["NORM"], rel=0.05)  # init_scale=2**10
    assert after["NORM"] < 100 and after["WEIGHT"] < 10


PROTOCOL_BUGS = """\
    import torch


    def setup():
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
        return model, optimizer, scaler, torch.randn(8, 4)


    def forward(model, x):
        with torch.autocast("cpu", dtype=torch.float16):
            return model(x).float().pow(2).mean()


    def double_step(model, optimizer, scaler, x):
        scaler.scale(forward(model, x)).backward()
        scaler.step(optimizer)
        scaler.step(optimizer)  # DTL304
        scaler.update()


    def double_unscale(model, optimizer, scaler, x):
        scaler.scale(forward(model, x)).backward()
        scaler.unscale_(optimizer)
        scaler.unscale_(optimizer)  # DTL304
        scaler.step(optimizer)
        scaler.update()


    def unscale_after_step(model, optimizer, scaler, x):
        scaler.scale(forward(model, x)).backward()
        scaler.step(optimizer)
        scaler.unscale_(optimizer)  # DTL304
        scaler.update()


    def update_before_step(model, optimizer, scaler, x):
        for _ in range(2):
            scaler.scale(forward(model, x)).backward()
            scaler.update()  # DTL304
            scaler.step(optimizer)
            optimizer.zero_grad()


    def step_without_scale(model, optimizer, scaler, x):
        forward(model, x).backward()
        scaler.step(optimizer)  # DTL304
        scaler.update()


    def step_bypasses_scaler(model, optimizer, scaler, x):
        scaler.scale(forward(model, x)).backward()
        optimizer.step()  # DTL305
        scaler.update()


    for case in (double_step, double_unscale, unscale_after_step, update_before_step, step_without_scale,
                 step_bypasses_scaler):
        try:
            case(*setup())
            print(case.__name__, "|", "no error")
        except (RuntimeError, AssertionError) as error:
            print(case.__name__, "|", str(error).splitlines()[0])
    """


def test_every_flagged_protocol_bug_fails_under_torch_on_cpu(tmp_path):
    """What DTL304/DTL305 flag statically really breaks at run time, with the message they quote."""
    import torch  # noqa: F401  (the test extra installs it: fail loudly when absent)
    source = textwrap.dedent(PROTOCOL_BUGS)
    lines = source.splitlines()
    expected = {(line.split("# ")[-1], number) for number, line in enumerate(lines, start=1) if line.endswith(("# DTL304", "# DTL305"))}
    assert set(found(source, "DTL303", "DTL304", "DTL305")) == expected
    script = tmp_path / "protocol_bugs.py"
    script.write_text(source, encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    errors = dict(line.split(" | ", 1) for line in result.stdout.splitlines())
    assert len(errors) == 6
    report = check_text(source, "protocol_bugs.py", Settings(select=("DTL304", "DTL305")))
    by_function = {_in_function(lines, f.line): f for f in report.findings}
    for name, error in errors.items():
        finding = by_function[name]
        if finding.code == "DTL304":  # the message quotes the very error torch raises
            quoted = re.search(r'"([^"]+)"', finding.message).group(1)
            assert error.startswith(quoted), (name, error, finding.message)
        else:
            assert error == "No inf checks were recorded prior to update.", (name, error)


def _in_function(lines: list[str], number: int) -> str:
    for line in reversed(lines[:number]):
        if line.startswith("def "):
            return line[4:].split("(")[0]
    return ""


FROZEN_BASE = (
    "import torch\nimport torch.nn as nn\n\n"
    "class Adapter(nn.Module):\n"
    "    def __init__(self, base):\n"
    "        super().__init__()\n"
    "        self.base = base\n"
    "        self.lora = nn.Linear(16, 16)\n\n"
    "base = nn.Linear(16, 16).half()\n"
    "base.requires_grad_(False)\n"
    "model = Adapter(base)\n"
    "optimizer = torch.optim.AdamW({params}, lr=1e-3)\n"
    "scaler = torch.amp.GradScaler('cuda')\n"
    "for x in range(3):\n"
    "    scaler.scale(model(x).sum()).backward()\n"
    "    scaler.step(optimizer)\n"
    "    scaler.update()\n"
)


@pytest.mark.parametrize(
    "params",
    [
        "[p for p in model.parameters() if p.requires_grad]",
        "filter(lambda p: p.requires_grad, model.parameters())",
    ],
)
def test_optimizer_over_trainable_params_of_a_mixed_model_is_low_confidence(params):
    # A frozen float16 base under float32 adapters: the optimizer never sees the float16 weights.
    report = check_text(FROZEN_BASE.format(params=params), "lora.py", Settings(min_confidence=Confidence.LOW))
    found = {(f.code, f.confidence) for f in report.findings if f.code in ("DTL302", "DTL404")}
    assert found == {("DTL302", Confidence.LOW), ("DTL404", Confidence.LOW)}


def test_optimizer_over_all_params_of_a_mixed_model_stays_medium():
    report = check_text(FROZEN_BASE.format(params="model.parameters()"), "lora.py", Settings())
    found = {(f.code, f.confidence) for f in report.findings if f.code in ("DTL302", "DTL404")}
    assert found == {("DTL302", Confidence.MEDIUM), ("DTL404", Confidence.MEDIUM)}


@pytest.mark.parametrize("tail, hazard", [
    ("model.load_state_dict(ckpt)\n", "restore the default once the model is built"),  # built to run it
    ("loss = model(x).sum()\nloss.backward()\n", "in training it makes every parameter"),
])
def test_half_default_tensor_type_leads_with_its_deprecation(tail, hazard):
    source = "import torch\ntorch.set_default_tensor_type(torch.cuda.HalfTensor)\nmodel = Transformer(args)\n" + tail
    report = check_text(source, "generation.py", Settings(select=("DTL702",)))
    (finding,) = report.findings
    assert finding.message.startswith(
        "`torch.set_default_tensor_type(torch.cuda.HalfTensor)` is deprecated since torch 2.1 (torch warns on every"
        " call): use `torch.set_default_dtype(torch.float16)` and `torch.set_default_device(\"cuda\")`")
    assert hazard in finding.message

"""facts/user_choice.py and devices.cpu_only_as_fallback: a float16 the user opts into, on a CPU
that is only the no-CUDA fallback (DTL709 stays silent there); flag_logic's flag parameters as
the file's calls bind them (DTL208)."""

import textwrap

import libcst as cst
import pytest

from dtype_lint.config import Settings
from dtype_lint.context import FileContext
from dtype_lint.engine import check_text
from dtype_lint.facts import devices, flag_logic, user_choice
from dtype_lint.facts.training import training_facts

FLAGS = """import argparse
import torch
def main(args, half=False, full=True):
    a = args.fp16
    b = args.no_half
    c = args.precision == "fp16"
    d = args.keep == "fp16"
    e = half
    f = full
    g = args.fp16 and args.compile
    h = args.fp16 or args.keep
parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
parser.add_argument("--no-half", action="store_false")
parser.add_argument("--precision", default="fp32")
parser.add_argument("--keep", default="fp16")
parser.add_argument("--compile", action="store_true")
"""


def _values(source):
    ctx = FileContext("t.py", source, cst.parse_module(source))
    values = {}
    for node in ctx.all_nodes:
        if isinstance(node, cst.Assign) and isinstance(node.targets[0].target, cst.Name):
            values[node.targets[0].target.value] = node.value
    return ctx, values


@pytest.mark.parametrize("name, expected", [
    ("a", True), ("b", False), ("c", True), ("d", False), ("e", True), ("f", False), ("g", True), ("h", False),
])
def test_a_test_is_opt_in_when_only_the_user_turns_it_on(name, expected):
    ctx, values = _values(FLAGS)
    assert user_choice.opt_in(ctx, values[name]) is expected


def _dtl709(source: str) -> list[int]:
    report = check_text(textwrap.dedent(source), "gen.py", Settings(select=("DTL709",)))
    assert not report.internal_errors, report.internal_errors
    return [f.line for f in report.findings]


FALLBACK = """\
    import argparse
    import torch
    import torch.nn as nn
    def main(args):
        {dtype}
        device = {device}
        net = nn.Linear(4, 4)
        net.to(dtype).to(device)
        return net(torch.randn(2, 4, device=device, dtype=dtype))
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--fp16", action="store_true")
        p.add_argument("--fp32", action="store_true")
        p.add_argument("--device", default="cpu")
        main(p.parse_args())
    """
OPTED = "dtype = torch.float16 if args.fp16 else torch.float32"
DEFAULT = "dtype = torch.float32 if args.fp32 else torch.float16"
AVAILABLE = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'


@pytest.mark.parametrize("dtype, device, reported", [
    (OPTED, AVAILABLE, False),  # the user asked, on the GPU they have
    (OPTED, '"cpu" if not torch.cuda.is_available() else "cuda"', False),
    (DEFAULT, AVAILABLE, True),  # float16 unless asked otherwise
    (OPTED, "args.device", True),  # --device defaults to the CPU: not a fallback
    (OPTED, '"cuda" if args.gpu else "cpu"', True),
])
def test_opted_in_float16_on_a_fallback_cpu_is_the_users_choice(dtype, device, reported):
    assert bool(_dtl709(FALLBACK.format(dtype=dtype, device=device))) is reported


def test_cpu_only_as_fallback_reads_the_availability_test():
    source = textwrap.dedent(FALLBACK.format(dtype=OPTED, device=AVAILABLE))
    ctx = FileContext("t.py", source, cst.parse_module(source))
    main = next(n for n in ctx.all_nodes if isinstance(n, cst.FunctionDef))
    assert devices.cpu_only_as_fallback(ctx, "net", main) is True


FLAG_PARAMETERS = """import torch
def step(x, amp=False):
    if amp:
        return 1
    return 0
def inner(x, amp):
    return step(x, amp=amp)
def outer(x, amp):
    return inner(x, amp)
def run(x):
    outer(x, False)
    outer(x, amp=False)
"""


def test_a_flag_parameter_is_followed_through_the_calls_that_bind_it():
    ctx, _ = _values(FLAG_PARAMETERS)
    defined = training_facts(ctx).functions
    functions = {name: defined[name][0] for name in ("outer", "inner")}
    assert flag_logic.parameter_truth(ctx, functions["outer"], "amp") is False
    assert flag_logic.parameter_truth(ctx, functions["inner"], "amp") is False  # its one call passes outer's
    body = next(n for n in ctx.all_nodes if isinstance(n, cst.Return) and n.value.value == "1")
    calls = [c for c in training_facts(ctx).calls if flag_logic.callee_name(c) == "step"]
    assert flag_logic.branch_never_taken(ctx, body, calls)
    handed = FLAG_PARAMETERS + "callbacks = [outer]\n"  # called from where the file does not say
    ctx, _ = _values(handed)
    outer = training_facts(ctx).functions["outer"][0]
    assert flag_logic.parameter_truth(ctx, outer, "amp") is None



def test_a_config_switch_defined_elsewhere_is_not_opt_in_by_its_name():
    """Latte's `args.use_fp16` comes from a YAML whose sample config turns it on
    (Vchitect/Latte#61): a switch the file does not define is not read as off by default."""
    from dtype_lint.facts.user_choice import opt_in

    def test_of(source: str):
        ctx = FileContext("t.py", source, cst.parse_module(source), Settings())
        return ctx, next(n.test for n in ctx.all_nodes if isinstance(n, cst.If))

    for name in ("cfg.common.fp16", "args.use_fp16", "opt.half"):
        assert not opt_in(*test_of(f"if {name}:\n    pass\n")), name
    flag = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--fp16", action="store_true")\nargs = p.parse_args()\nif args.fp16:\n    pass\n'
    assert opt_in(*test_of(flag))
    on = flag.replace('action="store_true"', "default=True")
    assert not opt_in(*test_of(on))

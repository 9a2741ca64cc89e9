"""The dtype-flow analysis (dtype_lint.facts.dtypes): casts, unions, branches, loops, self
attributes, function summaries, autocast regions and determinism."""

import os
import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from dtype_lint.context import FileContext


class Probe:
    """Analyse a snippet; look values up by the source text of an expression on a given line."""

    def __init__(self, source: str) -> None:
        self.source = textwrap.dedent(source)
        self.module = cst.parse_module(self.source)
        self.ctx = FileContext("snippet.py", self.source, self.module)
        self.flow = self.ctx.flow
        self.nodes: list[tuple[int, str, cst.CSTNode]] = []
        probe = self

        class Collect(cst.CSTVisitor):
            def on_visit(self, node):
                if isinstance(node, cst.BaseExpression):
                    line = probe.ctx.position(node).start.line
                    probe.nodes.append((line, probe.ctx.code_for(node), node))
                return True

        self.module.visit(Collect())

    def node(self, text: str, line: int | None = None, index: int = 0) -> cst.CSTNode:
        matches = [n for ln, code, n in self.nodes if code == text and (line is None or ln == line)]
        assert matches, f"no expression {text!r} on line {line}"
        return matches[-1] if line is None else matches[index]

    def value(self, text: str, line: int | None = None, index: int = 0):
        return self.flow.value_of(self.node(text, line, index))


def test_seed_half_model_and_default_float_input():
    p = Probe(
        """
        import torch
        model = MyNet()
        model = model.half()
        inputs = torch.randn(1, 10)
        output = model(inputs)
        """
    )
    model = p.value("model", 6)
    assert model.dtype == "fp16" and model.origin.line == 4 and model.origin.text == "model.half()"
    assert p.value("inputs", 6).dtype == "fp32"
    assert p.value("inputs", 6).since() == "since line 5 (`torch.randn(1, 10)`)"


@pytest.mark.parametrize(
    "cast,expected",
    [
        ("model.half()", "fp16"),
        ("model.bfloat16()", "bf16"),
        ("model.float()", "fp32"),
        ("model.double()", "fp64"),
        ("model.to(torch.float16)", "fp16"),
        ("model.to('cuda', torch.bfloat16)", "bf16"),
        ("model.to(device, dtype=torch.half)", "fp16"),
        ("model.to(dtype=T.bfloat16)", "bf16"),
        ("model.type(torch.HalfTensor)", "fp16"),
        ("model.to(device)", "fp32"),
    ],
)
def test_in_place_module_casts(cast, expected):
    p = Probe(
        f"""
        import torch
        import torch as T
        from torch import nn
        model = nn.Linear(2, 2)
        {cast}
        model(x)
        """
    )
    assert p.value("model", 7).dtype == expected
    assert [c.target for c in p.flow.casts_of("model")] == ([] if expected == "fp32" and "float" not in cast else ["model"])


def test_dtype_variable_union_and_config_mapping():
    p = Probe(
        """
        import torch
        weight_dtype = torch.float16 if args.fp16 else torch.float32
        vae.to(accelerator.device, dtype=weight_dtype)
        DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
        amp_dtype = DTYPES[args.precision]
        x = torch.zeros(3, dtype=amp_dtype)
        print(vae, x)
        """
    )
    vae = p.value("vae", 8)
    assert vae.kind == "module" and vae.dtypes == {"fp16", "fp32"} and not vae.certain
    assert vae.describe() == "float32 or float16"
    assert p.value("x", 8).dtypes == {"fp16", "bf16"}


def test_branches_join_and_early_exit():
    p = Probe(
        """
        import torch
        model = torch.nn.Linear(2, 2)
        if args.fp16:
            model.half()
        model(x)
        m2 = torch.nn.Linear(2, 2)
        if not ok:
            raise SystemExit
        else:
            m2.bfloat16()
        m2(x)
        """
    )
    model = p.value("model", 6)
    assert model.dtypes == {"fp16", "fp32"} and not model.certain
    assert model.origin_of("fp16").line == 5
    # The raising branch does not reach line 12.
    assert p.value("m2", 12).dtype == "bf16"


def test_loop_fixed_point_makes_loop_carried_values_unions():
    p = Probe(
        """
        import torch
        h = torch.randn(4)
        for step in range(10):
            y = h * 2
            h = h.half()
        print(h)
        """
    )
    assert p.value("h * 2").dtypes == {"fp32", "fp16"}
    assert p.value("h", 7).dtypes == {"fp32", "fp16"}


def test_self_attributes_from_init_and_helper_summaries():
    p = Probe(
        """
        import torch
        from transformers import AutoModelForCausalLM

        def to_half(m):
            m.half()
            return m

        def make_batch(n):
            return torch.randn(n, 8)

        class Trainer:
            def __init__(self, model):
                self.model = model
                self.optimizer = torch.optim.AdamW(self.model.parameters())

            def step(self, x):
                return self.model(x)

        lm = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
        trainer = Trainer(lm)
        batch = make_batch(4)
        trainer.step(batch)
        net = Net()
        to_half(net)
        net(batch)
        """
    )
    assert p.value("self.model", 18).dtype == "bf16"
    assert p.value("x", 18).dtype == "fp32"
    assert p.value("batch", 23).dtype == "fp32"
    net = p.value("net", 26)
    assert net.dtype == "fp16" and net.origin.text == "m.half()"
    optimizer = p.flow.optimizers[0]
    assert optimizer.target == "self.model" and optimizer.params.dtype == "bf16"


def test_uncalled_functions_are_analysed_with_unknown_parameters():
    p = Probe(
        """
        import torch
        def forward(x):
            y = x.float()
            z = torch.ones(3)
            return y + z
        """
    )
    assert p.value("x", 4) is None
    assert p.value("x.float()").dtype == "fp32"
    assert p.value("y + z").dtype == "fp32"


def test_numpy_float64_tokenizer_outputs_and_likes():
    p = Probe(
        """
        import numpy as np
        import torch
        arr = np.random.randn(4, 3)
        t = torch.from_numpy(arr)
        t32 = torch.tensor(arr.astype(np.float32))
        ids = tokenizer("hi", return_tensors="pt")
        h = torch.zeros(3, dtype=torch.bfloat16)
        like = torch.zeros_like(h)
        other = t.type_as(h)
        mask = t > 0
        print(t, t32, ids["input_ids"], like, other, mask, ids.attention_mask)
        """
    )
    assert p.value("t", 12).dtype == "fp64"
    assert p.value("t", 12).origin.text == "np.random.randn(4, 3)"
    assert p.value("t32", 12).dtype == "fp32"
    assert p.value('ids["input_ids"]').dtype == "int"
    assert p.value("ids.attention_mask").dtype == "int"
    assert p.value("like", 12).dtype == "bf16"
    assert p.value("other", 12).dtype == "bf16"
    assert p.value("mask", 12).dtype == "bool"


def test_model_dtype_and_x_dtype_are_dtype_values():
    p = Probe(
        """
        import torch
        model = AutoModel.from_pretrained("m", dtype=torch.float16)
        x = torch.randn(2, 2).to(model.dtype)
        y = torch.randn(2).to(dtype=x.dtype)
        print(x, y)
        """
    )
    assert p.value("x", 6).dtype == "fp16"
    assert p.value("y", 6).dtype == "fp16"


def test_autocast_regions_decorators_and_called_helpers():
    p = Probe(
        """
        import torch
        from torch.cuda.amp import autocast

        def compute(model, x):
            return model(x)

        @torch.autocast("cuda", dtype=torch.bfloat16)
        def decorated(model, x):
            return model(x)

        model = torch.nn.Linear(2, 2)
        with torch.autocast("cuda", dtype=torch.float16):
            out = compute(model, x)
            with torch.autocast("cuda", enabled=False):
                inner = model(out.float())
        outside = model(x)
        with autocast():
            y = model(x)
        """
    )
    assert p.flow.autocast_at(p.node("model(x)", 6)).dtype == "float16"
    assert p.flow.autocast_at(p.node("model(x)", 10)).dtype == "bfloat16"
    assert p.flow.autocast_at(p.node("model(out.float())")) is None
    assert len(p.flow.autocast_stack_at(p.node("model(out.float())"))) == 2
    assert p.flow.autocast_at(p.node("model(x)", 17)) is None
    assert p.flow.autocast_at(p.node("model(x)", 19)).device == "cuda"
    assert p.value("out", 16).autocast == "fp16"


def test_params_iteration_roles_and_optimizer_facts():
    p = Probe(
        """
        import torch
        model = Net().half()
        optimizer = torch.optim.Adam(
            [{"params": model.parameters(), "lr": 1e-4}], eps=1e-8
        )
        for name, param in model.named_parameters():
            param.grad = param.grad.half()
        """
    )
    param = p.value("param", 8)
    assert param.role == "param" and param.dtype == "fp16"
    assert p.value("param.grad", 8, index=1).role == "grad"  # the right-hand side
    assert p.value("param.grad", 8, index=0).dtype == "fp16"  # the target holds what is assigned
    (optimizer,) = p.flow.optimizers
    assert optimizer.target == "model" and optimizer.params.dtype == "fp16"
    assert optimizer.qualified == "torch.optim.Adam" and p.ctx.code_for(optimizer.eps) == "1e-8"


def test_unknown_stays_unknown():
    p = Probe(
        """
        import torch
        model = build_model(cfg)
        x = next(iter(loader))
        model(x)
        """
    )
    assert p.value("model", 5) is None
    assert p.value("x", 5) is None


def test_never_imports_torch_and_is_deterministic_across_hash_seeds(tmp_path):
    script = textwrap.dedent(
        """
        import sys
        import libcst as cst
        from dtype_lint.context import FileContext
        src = '''
        import torch
        d = {"a": torch.float16, "b": torch.bfloat16, "c": torch.float32}[k]
        m = Net()
        if a:
            m.to(d)
        elif b:
            m.double()
        x = torch.zeros(2, dtype=d)
        print(m, x)
        '''
        ctx = FileContext("s.py", src, cst.parse_module(src))
        flow = ctx.flow
        class V(cst.CSTVisitor):
            def visit_Name(self, node):
                v = flow.value_of(node)
                if v is not None:
                    print(node.value, v.kind, v.describe(), [o.line for _, o in v.origins])
        ctx.module.visit(V())
        assert "torch" not in sys.modules, "the analysis imported torch"
        """
    )
    path = tmp_path / "probe.py"
    path.write_text(script)
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, check=True)
        outputs.add(result.stdout)
    assert len(outputs) == 1
    (out,) = outputs
    assert "m module float32 or float16 or bfloat16 or float64" in out


def test_argmax_of_an_unknown_receiver_is_only_a_hint_where_numpy_is_used():
    with_numpy = Probe(
        """
        import numpy as np
        import torch
        def compute_metrics(eval_pred):
            preds = eval_pred.predictions.argmax(-1)
            ok = preds == eval_pred.label_ids
            return ok
        """
    )
    assert not with_numpy.value("ok", 7).certain
    torch_only = Probe(
        """
        import torch
        def accuracy(logits, labels):
            ok = logits.argmax(-1) == labels
            return ok
        """
    )
    assert torch_only.value("ok", 5).dtype == "bool"


def test_rules_stay_silent_on_hf_compute_metrics_with_numpy():
    from dtype_lint.config import Settings
    from dtype_lint.engine import check_text
    from dtype_lint.findings import Confidence

    source = textwrap.dedent(
        """
        import numpy as np
        import torch

        def compute_metrics(eval_pred):
            predictions = eval_pred.predictions.argmax(-1)
            return {"accuracy": (predictions == eval_pred.label_ids).mean()}
        """
    )
    report = check_text(source, "metrics.py", Settings(min_confidence=Confidence.MEDIUM))
    assert [f.code for f in report.findings] == []


def test_set_default_dtype_changes_factory_and_layer_defaults():
    p = Probe(
        """
        import torch
        a = torch.zeros(2)
        torch.set_default_dtype(torch.float64)
        b = torch.zeros(2)
        layer = torch.nn.Linear(2, 2)
        print(a, b, layer)
        """
    )
    assert p.value("a", 7).dtype == "fp32"
    assert p.value("b", 7).dtype == "fp64"
    assert p.value("layer", 7).dtype == "fp64"


def test_helper_called_with_different_dtypes_records_the_join():
    p = Probe(
        """
        import torch
        def run(model, x):
            return model(x)
        run(torch.nn.Linear(2, 2).half(), torch.randn(1, 2).half())
        run(torch.nn.Linear(2, 2), torch.randn(1, 2))
        """
    )
    assert p.value("model", 4).dtypes == {"fp16", "fp32"}
    assert p.value("x", 4).dtypes == {"fp16", "fp32"}
    assert p.flow.summary(p.module.body[1]).calls == 2  # body[1] is `def run`


def test_recursion_and_deep_call_chains_terminate():
    p = Probe(
        """
        import torch
        def f(x, n):
            if n == 0:
                return x.half()
            return f(x, n - 1)
        y = f(torch.randn(2), 10)
        """
    )
    value = p.value("y", 7)
    assert value is None or "fp16" in value.dtypes


def test_cast_records_carry_before_values_and_order():
    p = Probe(
        """
        import torch
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            model.half()
        """
    )
    (cast,) = p.flow.casts_of("model")
    assert cast.in_place and cast.dtypes == {"fp16"}
    assert cast.before.dtypes == {"fp32", "fp16"}  # first pass fp32, later passes fp16
    assert p.flow.optimizers[0].order < cast.order


def test_numpy_true_division_of_integer_arrays_is_float64():
    p = Probe(
        """
        import numpy as np
        import torch
        counts = np.bincount(labels)
        weights = counts.sum() / counts
        scaled = counts / 3
        ids = torch.arange(10)
        frac = ids / ids
        """
    )
    assert p.value("np.bincount(labels)").dtypes == {"int"}
    assert p.value("counts.sum() / counts").dtypes == {"fp64"}
    assert p.value("counts / 3").dtypes == {"fp64"}
    assert p.value("counts.sum() / counts").origin.line == 5
    assert p.value("ids / ids").dtypes == {"fp32"}  # torch keeps its default float


def test_a_known_argument_decides_is_none_tests():
    p = Probe("""
        import torch
        def load(dtype_override=None):
            x = torch.randn(2)
            if dtype_override is not None:
                x = x.to(dtype_override)
            y = torch.zeros(2, dtype=dtype_override if dtype_override is not None else torch.float32)
            return x, y
        a, b = load(dtype_override=torch.bfloat16)
        c, d = load()
    """)
    # the caller's bfloat16 is never None: one branch runs, and the result is certain
    assert p.value("a", 9).dtypes == {"bf16"} and not p.value("a", 9).partial
    assert p.value("b", 9).dtypes == {"bf16"} and not p.value("b", 9).partial
    # no argument: the default None decides the test too (the cast does not run)
    assert p.value("c", 10).dtypes == {"fp32"} and not p.value("c", 10).partial


def test_returns_when_called_runs_on_the_side():
    p = Probe("""
        import torch
        def cast(x, dtype=torch.float32):
            return x.to(dtype)
        y = cast(torch.randn(2))
    """)
    function = p.module.body[1]
    before = p.value("x.to(dtype)").dtypes
    from dtype_lint.facts.flow.values import make

    given = p.flow.returns_when_called(function, {"dtype": make("dtype", ("fp16",))})
    assert given.dtypes == {"fp16"}
    assert p.flow.returns_when_called(function, {}).dtypes == {"fp32"}  # the default
    assert p.value("x.to(dtype)").dtypes == before  # what the rules read is unchanged


# -- what the project pass's calling contexts rely on (dtype_lint/project/call_sites.py) -----------
def test_model_moved_then_cast_in_one_chain_is_a_module():
    p = Probe(
        """
        def evaluate(model, x):
            model = model.cuda().half().eval()
            out = model(x)
        """
    )
    assert p.value("model", 4).kind == "module" and p.value("model", 4).dtype == "fp16"
    out = p.value("out", 4)
    assert out.kind == "tensor" and out.dtypes == {"fp16"} and out.partial  # a whole model's output: a hint


def test_unknown_model_called_under_autocast_gives_its_dtype_where_known():
    p = Probe(
        """
        import torch
        def step(net_g, x, encode):
            with torch.autocast("cuda", dtype=torch.float16):
                y = net_g(x)
                z = encode(x)
        """
    )
    assert p.value("y", 5).dtypes == {"fp16"} and p.value("y", 5).partial
    assert p.value("z", 6) is None  # not spelled like a model: unknown


def test_unpacking_a_comprehension_gives_each_name_its_element():
    p = Probe(
        """
        import torch
        q = torch.randn(2, 4).half()
        q, k = (t.transpose(0, 1) for t in (q, q))
        """
    )
    assert p.value("k", 4).dtype == "fp16"


def test_interpreter_with_dtype_defaults_runs_entry_points_in_their_default():
    from dtype_lint.facts.flow.interpreter import Interpreter

    source = textwrap.dedent(
        """
        import torch
        def sample(dtype=torch.float16):
            q = torch.randn(2, 4, dtype=dtype)
        """
    )
    p = Probe(source)
    assert p.value("q", 4).dtypes == frozenset()  # the rules' flow: callers usually pass the dtype
    defaults = Interpreter(p.ctx, dtype_defaults=True).run()
    q = defaults.value_of(p.node("q", 4))
    assert q.dtypes == {"fp16"} and q.partial  # one reachable configuration


# -- op results from torch's generated semantics (dtype_lint/facts/semantics.py) ------------------
def test_where_with_python_floats_is_the_default_float():
    p = Probe(
        """
        import torch
        x = torch.randn(4).half()
        mask = torch.where(x > 0, 1.0, 0.0)
        kept = torch.where(x > 0, x, float("-inf"))
        """
    )
    assert p.value("mask", 4).dtype == "fp32"
    assert p.value("kept", 5).dtype == "fp16"


def test_dropout_keeps_its_input_dtype_and_sum_keeps_half():
    p = Probe(
        """
        import torch
        from torch import nn
        drop = nn.Dropout(0.1)
        h = torch.randn(2, 8).half()
        out = drop(h)
        total = h.sum(dim=1)
        count = (h > 0).sum(dim=1)
        """
    )
    assert p.value("out", 6).dtype == "fp16"
    assert p.value("total", 7).dtype == "fp16"
    assert p.value("count", 8).dtype == "int"


def test_factory_takes_a_parameters_dtype():
    p = Probe(
        """
        import torch
        from torch import nn
        layer = nn.Linear(4, 4).half()
        buffer = torch.zeros(3, dtype=layer.weight.dtype)
        """
    )
    assert p.value("buffer", 5).dtype == "fp16"


def test_ops_the_data_knows_and_ones_it_does_not():
    p = Probe(
        """
        import torch
        x = torch.randn(4).half()
        powered = torch.float_power(x, 2)
        index = torch.argmax(x)
        spectrum = torch.fft.rfft(x)
        odd = torch.some_private_thing(x)
        """
    )
    assert p.value("powered", 4).dtype == "fp64"  # float_power computes in float64
    assert p.value("index", 5).dtype == "int"
    assert p.value("spectrum", 6).dtype == "fp16"  # complex32 on CUDA: float16 parts
    odd = p.value("odd", 7)
    assert odd is None or not odd.dtypes  # not in the data: unknown, not x's dtype


def test_autocast_runs_float32_ops_in_float32():
    p = Probe(
        """
        import torch
        x = torch.randn(4, 4, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            y = torch.mm(x, x)
            p = torch.softmax(y, dim=-1)
        """
    )
    assert p.value("y", 5).dtype == "fp16"
    assert p.value("p", 6).dtype == "fp32"


def test_layer_norm_module_gives_half_input_back_in_half():
    p = Probe(
        """
        import torch
        from torch import nn
        norm = nn.LayerNorm(8)
        h = torch.randn(2, 8).half()
        out = norm(h)
        """
    )
    assert p.value("out", 6).dtype == "fp16"


# -- layers without parameters (facts/flow/library.py PARAMETERLESS_LAYERS) ---------------------
CONSTRUCTOR_ARGS = {"Unflatten": (1, (2, 2)), "Threshold": (0.1, 0.0), "MaxPool1d": (2,), "MaxPool2d": (2,),
                    "MaxPool3d": (2,), "AvgPool1d": (2,), "AvgPool2d": (2,), "AvgPool3d": (2,), "LPPool1d": (2, 2),
                    "LPPool2d": (2, 2), "PixelShuffle": (2,), "PixelUnshuffle": (2,), "ChannelShuffle": (2,),
                    "Fold": ((4, 4), 2), "Unfold": (2,)}


def test_parameterless_layers_hold_no_parameter_or_buffer_in_torch():
    torch = pytest.importorskip("torch")
    from dtype_lint.facts.flow.library import PARAMETERLESS_LAYERS

    for name in sorted(PARAMETERLESS_LAYERS):
        cls = getattr(torch.nn, name)
        if name.startswith("Adaptive"):
            layer = cls(2)
        elif "Pad" in name:
            layer = cls(1, 0.0) if name.startswith("Constant") else cls(1)
        else:
            layer = cls(*CONSTRUCTOR_ARGS.get(name, ()))
        assert not list(layer.parameters()) and not list(layer.buffers()), name


def test_a_parameterless_layer_gives_its_inputs_dtype_whatever_it_was_cast_to():
    p = Probe(
        """
        import torch
        from torch import nn
        act = nn.GELU().half()
        y = act(torch.randn(2, 4))
        lin = nn.Linear(4, 4).half()
        z = lin(torch.randn(2, 4).half())
        w = lin(torch.randn(2, 4))
        """
    )
    assert p.value("y", 5).dtype == "fp32"
    assert p.value("z", 7).dtypes == {"fp16"}
    assert not p.value("w", 8).dtypes  # torch raises (Half weight, Float input): nothing flows on


def test_variadic_operands_einsum_and_functions_without_typed_parameters():
    # ``einsum(equation, *operands)`` and ``F.max_pool2d(input, ...)`` (no typed stub): the
    # tensor-valued arguments decide the result's dtype
    p = Probe(
        """
        import torch
        import torch.nn.functional as F
        q = torch.randn(2, 4, 8).half()
        k = torch.randn(2, 4, 8, dtype=torch.bfloat16)
        scores = torch.einsum("bqd,bkd->bqk", q, q)
        pooled = F.max_pool2d(q, 2)
        mixed = torch.einsum("bqd,bkd->bqk", q, k)
        """
    )
    assert p.value("scores", 6).dtype == "fp16"
    assert p.value("pooled", 7).dtype == "fp16"
    assert not p.value("mixed", 8).dtypes  # torch raises on Half with BFloat16: nothing flows on


def test_a_selector_mask_of_unknown_dtype_does_not_hide_the_result():
    p = Probe(
        """
        import torch
        def fill(x, mask):
            h = x.half()
            kept = torch.where(mask, h, -1e30)
            zeroed = h.masked_fill(mask, 0.0)
            picked = h.where(mask, 0.0)
            return kept, zeroed, picked
        """
    )
    assert p.value("kept", 5).dtype == "fp16"
    assert p.value("zeroed", 6).dtype == "fp16"
    assert p.value("picked", 7).dtype == "fp16"


def test_a_move_to_another_tensors_device_keeps_the_dtype():
    p = Probe(
        """
        import torch
        def blur(prediction, device):
            kernel = torch.ones(3, 1, 5, 5)
            moved = kernel.to(prediction.device)
            also = kernel.to(device)
            like = kernel.to(prediction)
            return moved, also, like
        """
    )
    assert p.value("moved", 5).dtype == "fp32" and not p.value("moved", 5).partial
    assert p.value("also", 6).dtype == "fp32" and not p.value("also", 6).partial
    assert not p.value("like", 7).certain  # ``.to(tensor)`` takes that tensor's (unknown) dtype


def test_inject_adapter_in_model_returns_the_model_it_is_given():
    # peft.inject_adapter_in_model(config, model) attaches adapters in place and returns the model:
    # its dtype is the model's (not the config's, the first argument), marked as carrying adapters
    p = Probe(
        """
        import torch
        from peft import inject_adapter_in_model
        net = Net().half()
        net = inject_adapter_in_model(config, model=net)
        y = net
        """
    )
    value = p.value("net", 6)
    assert value.kind == "module" and value.dtype == "fp16" and value.role == "peft"


def test_dataloader_batch_is_what_its_collate_fn_returns():
    p = Probe(
        """
        import torch
        from torch.utils.data import DataLoader
        def collate(samples):
            pixels = torch.stack([s["pixels"] for s in samples])
            return {"pixels": pixels.float(), "ids": torch.stack([s["ids"] for s in samples])}
        loader = DataLoader(dataset, batch_size=4, collate_fn=collate)
        for batch in loader:
            x = batch["pixels"]
            y = batch["ids"]
        """
    )
    assert p.value("x", 9).dtype == "fp32"
    y = p.value("y", 10)
    assert y is None or not y.dtypes  # stacked from samples nobody knows


def test_python_type_as_dtype_is_float64():
    p = Probe(
        """
        import numpy as np
        import torch
        a = np.array(rows, dtype=float)
        b = torch.zeros(3, dtype=float)
        c = torch.ones(3, dtype=int)
        """
    )
    assert p.value("a", 4).dtype == "fp64"
    assert p.value("b", 5).dtype == "fp64"
    assert p.value("c", 6).dtype == "int"


def test_iterating_a_tensor_gives_its_dtype_but_not_the_elements_of_a_1d_factory():
    # rows of a stacked batch keep its dtype; the elements of ``torch.logspace(...)`` are 0-dim,
    # which promote nothing they meet, so they stay unknown (ControlNet's ``zip(samples, scales)``)
    p = Probe(
        """
        import torch
        masks = torch.stack([torch.ones(4, 4), torch.zeros(4, 4)])
        for mask in masks:
            m = mask
        scales = torch.logspace(-1, 0, 3) * 2.0
        for scale in scales:
            s = scale
        steps = torch.arange(3, dtype=torch.float16)
        for step in steps:
            t = step
        """
    )
    assert p.value("m", 5).dtype == "fp32"
    for name, line in (("s", 8), ("t", 11)):
        value = p.value(name, line)
        assert value is None or not value.dtypes

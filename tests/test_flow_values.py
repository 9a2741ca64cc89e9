"""The dtype flow follows values the way Python binds and stores them: calls of any callee,
positional / keyword / ``*args`` / ``**kwargs`` binding, lists and dicts (literals, concatenation,
in-place growth, indexing, unpacking) and torch.nn containers (layers run in order, indexed,
iterated, cast with the container)."""

from test_flow import Probe


# -- callees ------------------------------------------------------------------------------------
def test_an_instance_with_dunder_call_runs_it_with_the_arguments():
    p = Probe(
        """
        import torch
        class Clamp:
            def __call__(self, ids, scores):
                scores[0, 0] = 1e9
                return scores
        scores = torch.randn(2, 8).half()
        out = Clamp()(None, scores)
        proc = Clamp()
        again = proc(None, scores)
        """
    )
    assert p.value("scores", 5).dtype == "fp16"
    assert p.value("out", 8).dtype == "fp16"
    assert p.value("again", 10).dtype == "fp16"


def test_a_called_call_and_an_indexed_layer_are_modules_too():
    p = Probe(
        """
        import torch
        y = torch.nn.Linear(8, 2).half()(torch.randn(3, 8).half())
        layers = [torch.nn.Linear(8, 8).half(), torch.nn.Linear(8, 8).half()]
        z = layers[0](torch.randn(3, 8))
        w = layers[i](torch.randn(3, 8))
        """
    )
    assert p.value("y", 3).dtype == "fp16"
    assert p.value("layers[0]", 5).dtype == "fp16"
    assert p.value("layers[i]", 6).dtype == "fp16"


# -- binding ------------------------------------------------------------------------------------
def test_keywords_defaults_and_star_arguments_bind_like_python():
    p = Probe(
        """
        import torch
        def combine(first, *rest, scale=None, **options):
            a = first
            b = rest[0]
            c = options["mask"]
            return scale
        x = torch.zeros(2, dtype=torch.float16)
        m = torch.zeros(2, dtype=torch.bfloat16)
        combine(x, m, mask=x, scale=torch.float64)
        args = (m, x)
        kwargs = {"mask": m, "scale": torch.float16}
        out = combine(*args, **kwargs)
        """
    )
    assert p.value("a", 4).dtypes == {"fp16", "bf16"}
    assert p.value("b", 5).dtypes == {"bf16", "fp16"}
    assert p.value("c", 6).dtypes == {"fp16", "bf16"}
    assert p.value("out", 13).dtype == "fp16"


def test_an_unreadable_double_star_leaves_the_defaults_unknown():
    p = Probe(
        """
        import torch
        def make(n, dtype=torch.float16):
            t = torch.zeros(n, dtype=dtype)
            return t
        out = make(3, **settings)
        """
    )
    assert p.value("out", 6) is None or not p.value("out", 6).dtypes


# -- lists and dicts ----------------------------------------------------------------------------
def test_parameter_lists_concatenate_and_grow_in_place():
    p = Probe(
        """
        import itertools
        import torch
        a = torch.nn.Linear(4, 4).half()
        b = torch.nn.Embedding(9, 4).half()
        joined = list(a.parameters()) + list(b.parameters())
        spliced = [*a.parameters(), *b.parameters()]
        chained = itertools.chain(a.parameters(), b.parameters())
        grown = []
        grown += list(a.parameters())
        grown.extend(b.parameters())
        opt = torch.optim.AdamW(grown, eps=1e-8)
        """
    )
    for text, line in (("joined", 6), ("spliced", 7), ("chained", 8)):
        assert p.value(text, line).kind == "params" and p.value(text, line).dtype == "fp16", text
    assert p.value("opt", 12).dtype == "fp16"


def test_dict_entries_keep_their_own_values():
    p = Probe(
        """
        import torch
        batch = {"pixels": torch.rand(2, 3), "ids": torch.tensor([1, 2])}
        batch["mask"] = torch.ones(2, dtype=torch.float16)
        pixels = batch["pixels"]
        ids = batch.get("ids")
        mask = batch["mask"]
        merged = dict(noise=torch.randn(2).half(), **batch)
        noise = merged["noise"]
        """
    )
    assert p.value("pixels", 5).dtype == "fp32"
    assert p.value("ids", 6).dtype == "int"
    assert p.value("mask", 7).dtype == "fp16"
    assert p.value("noise", 9).dtype == "fp16"


def test_list_pop_append_and_star_unpacking():
    p = Probe(
        """
        import torch
        saved = [torch.randn(2).half(), torch.randn(2)]
        loras = list(saved)
        up = loras.pop(0)
        down = loras.pop(0)
        chunks = []
        for i in range(3):
            chunks.append(torch.randn(2).bfloat16())
        whole = torch.cat(chunks)
        head, *tail = saved
        """
    )
    assert p.value("up", 5).dtype == "fp16"
    assert p.value("down", 6).dtype == "fp32"
    assert p.value("whole", 10).dtype == "bf16"
    assert p.value("head", 11).dtype == "fp16"
    assert p.value("tail", 11).items[0].dtype == "fp32"


# -- torch.nn containers ------------------------------------------------------------------------
def test_sequential_runs_its_layers_in_order():
    p = Probe(
        """
        import torch
        from torch import nn
        class Scale(nn.Module):
            def forward(self, x):
                s = x * 2
                return s
        net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(), Scale(), nn.ReLU()).half()
        out = net(torch.randn(2, 4).half())
        with torch.autocast("cuda", dtype=torch.float16):
            amp = nn.Sequential(nn.Linear(4, 4), nn.GELU())(torch.randn(2, 4))
        """
    )
    assert p.value("s", 6).dtypes >= {"fp16"}
    assert p.value("out", 9).dtype == "fp16"
    assert p.value("amp", 11).dtype == "fp16"


def test_layers_with_their_own_dtype_stay_in_it_inside_a_container():
    p = Probe(
        """
        import torch
        from torch import nn
        class Tower(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([nn.Linear(4, 4, dtype=torch.float16) for _ in range(3)])
            def forward(self, x):
                for block in self.blocks:
                    x = block(x)
                return x
        tower = Tower()
        out = tower(torch.randn(2, 4, dtype=torch.float16))
        first = tower.blocks[0]
        """
    )
    assert p.value("block", 9).dtype == "fp16"
    assert p.value("out", 13).dtype == "fp16"


def test_a_container_cast_casts_its_layers():
    p = Probe(
        """
        import torch
        from torch import nn
        net = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
        net.half()
        first = net[0]
        net2 = nn.ModuleList([nn.Linear(4, 4)]).to(torch.bfloat16)
        second = net2[-1]
        """
    )
    assert p.value("first", 6).dtype == "fp16"
    assert p.value("second", 8).dtype == "bf16"


# -- modules own parameters and buffers, not every tensor attribute ------------------------------
def test_a_module_cast_moves_buffers_and_parameters_not_plain_tensor_attributes():
    p = Probe(
        """
        import torch
        from torch import nn
        class Head(nn.Module):
            def __init__(self, weights):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(4))
                self.register_buffer("prior", torch.zeros(4))
                self.class_weights = torch.tensor([1.0, 2.0, 0.5, 1.0])
            def forward(self, x):
                a = self.scale
                b = self.prior
                c = self.class_weights
                return x
        head = Head(None).half()
        head(torch.randn(2, 4).half())
        """
    )
    assert p.value("a", 11).dtype == "fp16"
    assert p.value("b", 12).dtype == "fp16"
    assert p.value("c", 13).dtype == "fp32"


def test_an_eps_from_a_command_line_default_is_a_reachable_configuration():
    from pathlib import Path

    from dtype_lint.config import Settings
    from dtype_lint.engine import check_text
    from dtype_lint.findings import Confidence

    path = Path(__file__).resolve().parent.parent / "fixtures" / "flow" / "adam_eps_from_settings.py"
    report = check_text(path.read_text(), str(path), Settings())
    eps = {f.line: f.confidence for f in report.findings if f.code == "DTL404"}
    assert eps == {15: Confidence.MEDIUM, 16: Confidence.HIGH}


def test_apply_casts_like_the_function_it_is_given_or_leaves_the_module_unknown():
    p = Probe(
        """
        import torch
        from torch import nn
        def to_half(module):
            module._apply(lambda t: t.half() if t.is_floating_point() else t)
        def convert(module, fn):
            module._apply(fn)
        a = nn.Linear(4, 4)
        to_half(a)
        b = nn.Linear(4, 4)
        convert(b, caster)
        c = nn.Linear(4, 4)
        c._apply(lambda t: t.to(torch.bfloat16))
        a
        b
        c
        """
    )
    assert p.value("a", 14).dtype == "fp16"
    assert not p.value("b", 15).dtypes  # unknown, never taken for float32
    assert p.value("c", 16).dtype == "bf16"


def test_a_written_flag_decides_its_branches():
    p = Probe(
        """
        import torch
        use_lora = False
        inference_dtype = torch.float16
        unet_dtype = inference_dtype if use_lora else torch.float32
        cache = None
        if cache is not None:
            unet_dtype = torch.bfloat16
        if not use_lora:
            vae_dtype = inference_dtype
        else:
            vae_dtype = torch.float32
        unet_dtype
        vae_dtype
        """
    )
    assert p.value("unet_dtype", 13).dtype == "fp32"
    assert p.value("vae_dtype", 14).dtype == "fp16"


def test_written_flags_do_not_decide_in_a_script_that_rewrites_its_globals():
    p = Probe(
        """
        import torch
        half = False
        exec(open("configurator.py").read())
        dtype = torch.float16 if half else torch.float32
        dtype
        """
    )
    assert p.value("dtype", 6).dtypes == {"fp16", "fp32"}


def test_a_flag_tested_twice_takes_the_same_side_both_times():
    p = Probe(
        """
        import torch
        from torch import nn
        def main(args):
            model = nn.Linear(4, 4)
            if args.pure_fp16:
                model = model.half()
            params = [torch.zeros(4)] if args.pure_fp16 else model.parameters()
            if not args.pure_fp16:
                plain = model
            return params, plain
        """
    )
    assert p.value("model.parameters()", 8).dtype == "fp32"
    assert p.value("plain", 10).dtype == "fp32"


def test_pure_float16_training_with_a_raised_eps_is_deliberate():
    from dtype_lint.config import Settings
    from dtype_lint.engine import check_text
    from dtype_lint.findings import Confidence

    source = (
        "import torch\nfrom torch import nn\n"
        "model = nn.Linear(8, 8).half()\nopt = torch.optim.Adam(model.parameters(), lr=1e-4, eps=1e-4)\n"
        "plain = nn.Linear(8, 8).half()\nplain_opt = torch.optim.Adam(plain.parameters(), lr=1e-4)\n"
        "some = nn.Linear(8, 8).half()\nsome_opt = torch.optim.Adam(some.parameters(), lr=1e-4, eps=1e-5)\n"
    )
    report = check_text(source, "train.py", Settings(min_confidence=Confidence.LOW))
    found = {(f.line, f.confidence) for f in report.findings if f.code == "DTL401"}
    # eps at float16's smallest normal (6.1e-5) or above: set up for float16 on purpose, silent;
    # 1e-5 is raised but still subnormal in float16: a low-confidence finding; the default: high
    assert found == {(5, Confidence.HIGH), (7, Confidence.LOW)}

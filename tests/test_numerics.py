"""The numerics rules (DTL501-DTL508) beyond their inline examples and fixtures: confidence
levels by inferred dtype, the value facts they rely on (constants, ``self.eps``, saturated
masks), which ``finfo`` attribute a fix picks, and fixes applied by the real CLI."""

import libcst as cst
import pytest

from conftest import run_cli
from dtype_lint.config import Settings
from dtype_lint.context import FileContext
from dtype_lint.engine import check_text
from dtype_lint.findings import Confidence
from dtype_lint.facts.numerics import number


def findings(source, *codes, low=True):
    settings = Settings(select=codes, min_confidence=Confidence.LOW if low else Confidence.MEDIUM)
    report = check_text(source, "snippet.py", settings, prefilter=False)
    assert not report.internal_errors, report.internal_errors
    return report.findings


def numbers_in(source):
    """Evaluate the right-hand side of every ``probe = <expr>`` statement of ``source``."""
    ctx = FileContext("snippet.py", source, cst.parse_module(source))
    values = []

    class Probe(cst.CSTVisitor):
        def visit_Assign(self, node):
            if isinstance(node.targets[0].target, cst.Name) and node.targets[0].target.value == "probe":
                found = number(ctx, node.value)
                values.append(None if found is None else found.value)

    ctx.module.visit(Probe())
    return values


def test_constant_forms_evaluate_to_their_numbers():
    source = (
        "import math\nLARGE = 2**30\nNEG = -LARGE\n"
        "probe = float(2**30)\nprobe = -1e9\nprobe = NEG\nprobe = float('-inf')\nprobe = -math.inf\n"
        "probe = 1 / 65536 / 1024\nprobe = some_call()\n"
    )
    assert numbers_in(source) == [2.0**30, -1e9, -(2.0**30), float("-inf"), float("-inf"), 1 / 65536 / 1024, None]


def test_self_eps_follows_init_default_and_the_files_constructions():
    norm = (
        "import torch\nclass Norm(torch.nn.Module):\n    def __init__(self, dim, eps=1e-8):\n"
        "        super().__init__()\n        self.eps = eps\n    def forward(self, x):\n        probe = self.eps\n"
    )
    assert numbers_in(norm) == [1e-8]
    # the constructions of this file decide: all pass 1e-5, or they disagree (no number)
    assert numbers_in(norm + "layer = Norm(64, eps=1e-5)\n") == [1e-5]
    assert numbers_in(norm + "a = Norm(64, eps=1e-5)\nb = Norm(64)\n") == [None]
    assert numbers_in(norm + "layer = Norm(64, 1e-8)\n") == [1e-8]


@pytest.mark.parametrize(
    "dtype_line,expected",
    [
        ("x = torch.randn(4, 8, dtype=torch.float16)", Confidence.HIGH),
        ("x = torch.randn(4, 8, dtype=torch.float16 if args.fp16 else torch.float32)", Confidence.MEDIUM),
        ("x = torch.randn(4, 8, dtype=torch.bfloat16)", None),
        ("x = torch.randn(4, 8)", None),
        ("x = load_activations()", None),
    ],
)
def test_overflow_literal_confidence_follows_the_inferred_dtype(dtype_line, expected):
    source = f"import torch\n{dtype_line}\ny = x.masked_fill(x > 0, -1e9)\n"
    found = findings(source, "DTL501")
    assert [f.confidence for f in found] == ([expected] if expected else [])


def test_overflow_literal_message_names_the_dtype_and_its_origin():
    source = "import torch\nmodel_out = torch.randn(4, 8).half()\ny = model_out.masked_fill(model_out > 0, -1e9)\n"
    (finding,) = findings(source, "DTL501")
    assert "`model_out` is float16 since line 2 (`torch.randn(4, 8).half()`)" in finding.message
    assert "`torch.finfo(<tensor>.dtype).min`" in finding.message


def test_tiny_eps_fix_picks_tiny_for_logs_and_eps_for_denominators():
    source = (
        "import torch\np = torch.rand(8, dtype=torch.float16)\n"
        "a = torch.log(p + 1e-8)\nb = 1.0 / (p + 1e-8)\nc = torch.rsqrt(p + 1e-12)\nd = p.clamp(min=1e-10)\n"
    )
    contents = {f.line: f.fix.edits[-1].content for f in findings(source, "DTL504")}
    assert contents == {
        3: "torch.finfo(p.dtype).tiny",
        4: "torch.finfo(p.dtype).eps",
        5: "torch.finfo(p.dtype).eps",
        6: "torch.finfo(p.dtype).eps",
    }


def test_tiny_eps_through_a_class_attribute_has_no_fix():
    source = (
        "import torch\nclass Loss:\n    def __init__(self, eps=1e-8):\n        self.eps = eps\n"
        "    def compute(self, p):\n        return -torch.log(p + self.eps).mean()\n"
        "loss = Loss().compute(torch.rand(8).half())\n"
    )
    (finding,) = findings(source, "DTL504")
    assert finding.line == 6 and finding.fix is None
    assert "(= 1e-08, line 3)" in finding.message


def test_fp16_on_bf16_pretrained_is_silent_for_undocumented_families():
    # Was low confidence; no such finding read on unseen repositories was true (issue 21 item 6).
    source = (
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "m = AutoModelForCausalLM.from_pretrained('mistralai/Mistral-7B-v0.1', dtype=torch.float16)\n"
    )
    assert findings(source, "DTL507") == []


def test_accumulating_a_transformers_loss_is_only_low_confidence():
    source = (
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2', dtype=torch.float16)\n"
        "total = 0.0\nfor batch in loader:\n    outputs = model(**batch)\n    total += outputs.loss.detach()\n"
    )
    assert [f.confidence for f in findings(source, "DTL505")] == [Confidence.LOW]


def test_additive_masks_from_helpers_are_followed_through_to_and_expand():
    source = (
        "import torch\n"
        "def causal(T, dtype):\n    m = torch.full((T, T), torch.finfo(dtype).min)\n    return m.triu(1)[None, None]\n"
        "def padding(mask, dtype):\n    inv = 1.0 - mask[:, None, None, :].to(dtype)\n"
        "    return inv.masked_fill(inv.bool(), torch.finfo(dtype).min)\n"
        "def combined(mask, T, dtype):\n    return padding(mask, dtype).expand(-1, 1, T, T) + causal(T, dtype).to(mask.device)\n"
    )
    (finding,) = findings(source, "DTL502")
    assert finding.line == 9 and finding.confidence is Confidence.MEDIUM
    assert "line 3" in finding.message and "line 7" in finding.message


def test_sensitive_ops_are_silent_inside_autocast_and_for_bounded_inputs():
    source = (
        "import torch\nx = torch.randn(4, 8, dtype=torch.float16)\n"
        "with torch.autocast('cuda'):\n    a = torch.exp(x)\n"
        "p = torch.sigmoid(x)\nb = (1 - p) ** 2\nc = x.log_softmax(-1).exp()\nd = x ** 2\n"
    )
    assert [(f.line, f.confidence) for f in findings(source, "DTL503")] == [(7, Confidence.MEDIUM), (8, Confidence.MEDIUM)]


def test_float16_norms_accumulate_in_float32_in_torch():
    """The fact DTL503 leaves norms out for: torch sums a float16 norm's squares in float32, so
    it is finite wherever the norm itself is (InternVL's `image_features.norm(dim=-1)`)."""
    torch = pytest.importorskip("torch")
    x = torch.full((10,), 300.0, dtype=torch.float16)
    assert torch.isinf(x.pow(2).sum())  # the squares alone overflow float16
    for norm in (x.norm(), torch.norm(x, p=2), torch.linalg.vector_norm(x), torch.linalg.norm(x)):
        assert norm.dtype == torch.float16 and abs(float(norm) - 948.68) < 1


@pytest.mark.parametrize("line", [
    "n = features.norm(dim=-1, keepdim=True)",
    "n = torch.linalg.vector_norm(features, dim=-1)",
    "n = torch.norm(features, p=2, dim=1)",
])
def test_float16_norms_are_not_overflow_prone_but_their_squares_are(line):
    source = ("import torch\nfeatures = torch.randn(4, 768, dtype=torch.float16)\n" + line + "\n"
              "v = features.pow(2).sum(-1).sqrt()\n")
    assert [f.line for f in findings(source, "DTL503")] == [4]


def test_float16_softmax_is_float32_softmax_rounded_in_torch():
    """The fact DTL503 leaves softmax out for: torch subtracts the max and accumulates a float16
    softmax in float32, so it cannot overflow and equals the float32 result rounded to float16."""
    torch = pytest.importorskip("torch")
    x = torch.tensor([[60000.0, 60000.0, 0.0], [3.0, -20.0, 11.5]], dtype=torch.float16)
    assert torch.equal(x.softmax(-1), x.float().softmax(-1).half())
    assert torch.isfinite(x.softmax(-1)).all()


@pytest.mark.parametrize("line", [
    "p = scores.softmax(dim=-1)",
    "p = torch.softmax(scores, -1)",
    "p = torch.nn.functional.softmax(scores, dim=-1)",
])
def test_float16_softmax_is_not_overflow_prone_but_a_manual_one_is(line):
    source = ("import torch\nscores = torch.randn(4, 8, dtype=torch.float16)\n" + line + "\n"
              "q = scores.exp() / scores.exp().sum(-1, keepdim=True)\n")
    assert sorted({f.line for f in findings(source, "DTL503")}) == [4]


def test_unsafe_fixes_applied_by_the_cli_remove_the_findings(tmp_path):
    target = tmp_path / "attn.py"
    target.write_text(
        "import torch as T\n\n"
        "def attend(q, k, mask):\n"
        "    scores = (q @ k.transpose(-1, -2)).half()\n"
        "    scores = scores.masked_fill(mask == 0, -1e9)\n"
        "    probs = scores.softmax(-1, dtype=T.float32).to(scores.dtype)\n"
        "    return -T.log(probs + 1e-8)\n",
        encoding="utf-8",
    )
    result = run_cli("fix", "--unsafe-fixes", "--select", "DTL501,DTL504", str(target))
    assert result.returncode == 0, result.stdout + result.stderr
    fixed = target.read_text(encoding="utf-8")
    assert "scores.masked_fill(mask == 0, T.finfo(scores.dtype).min)" in fixed
    assert "T.log(probs + T.finfo(probs.dtype).tiny)" in fixed
    again = run_cli("check", "--no-cache", "--select", "DTL501,DTL504", "--min-confidence", "low", str(target))
    assert again.returncode == 0, again.stdout


def test_sensitive_op_inside_autocast_follows_torchs_autocast_lists():
    """Autocast runs softmax and exp in float32 (torch's semantics data); ``var`` it leaves in
    float16, but torch reduces it in float32 and only a spread above 256 overflows: low, and
    DTL503 is silent at low. The explicit square of the float16 output, outside autocast, is
    reported."""
    source = (
        "import torch\n"
        "x = torch.randn(8, 64, device='cuda')\n"
        "w = torch.randn(64, 64, device='cuda')\n"
        "with torch.autocast('cuda', dtype=torch.float16):\n"
        "    h = x @ w\n"
        "    p = torch.softmax(h, dim=-1)\n"
        "    spread = h.var(-1)\n"
        "    e = torch.exp(h)\n"
        "energy = (h ** 2).mean(-1)\n"
    )
    assert [(f.code, f.line) for f in findings(source, "DTL503")] == [("DTL503", 9)]


SOFTMAX_AFTER_FILL = '''import torch


def attend(q, k, mask):
    scores = (q @ k.transpose(-1, -2)).half()
    scores = FILL
    return scores.softmax(-1)
'''


@pytest.mark.parametrize(
    "fill, expected",
    [
        # torch raises on a float16 masked_fill beyond its range: DTL501's finding, no -inf reaches softmax
        ("scores.masked_fill(mask, -1e9)", [("DTL501", 6)]),
        # torch.where rounds the scalar to -inf, and a fully masked row's softmax is NaN
        ("torch.where(mask, scores, -1e30)", [("DTL501", 6), ("DTL503", 7)]),
        ('scores.masked_fill(mask, float("-inf"))', [("DTL503", 7)]),
        ("scores.masked_fill(mask, torch.finfo(scores.dtype).min)", []),
    ],
)
def test_softmax_is_flagged_only_where_its_scores_can_be_minus_inf(fill, expected):
    text = SOFTMAX_AFTER_FILL.replace("FILL", fill)
    found = check_text(text, "attend.py", Settings(select=("DTL501", "DTL503"), min_confidence=Confidence.LOW))
    assert [(f.code, f.line) for f in found.findings] == expected

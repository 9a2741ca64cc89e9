"""DTL506 lowp-integer-positions and DTL507 fp16-on-bf16-pretrained: values that low-precision
dtypes cannot hold (large integers; bf16-trained activations)."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.amp import dtype_literal, literal_string
from dtype_lint.facts.flow.library import FP16_TRIGGERS, LOWP_TRIGGERS
from dtype_lint.facts.training import walk
from dtype_lint.findings import Confidence
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.facts.numerics import (
    BF16,
    FP16,
    argument,
    call_shape,
    facts,
    number,
)

# Largest integer n such that every integer in [0, n] is exact: 2**(mantissa bits + 1).
EXACT_INTEGERS = {FP16: 2048, BF16: 256}
LONG = {FP16: "float16", BF16: "bfloat16"}
CASTS = frozenset({"to", "type", "type_as", "half", "bfloat16"})
SHAPE_OPS = frozenset({"expand", "view", "reshape", "unsqueeze", "repeat", "contiguous", "flatten", "expand_as"})


def _low_dtypes(ctx, expr: cst.BaseExpression | None) -> tuple[frozenset, bool] | None:
    """The low-precision dtypes ``expr`` (a dtype expression) may name, and whether it is
    certain; None when it names none (or nothing is known)."""
    if expr is None:
        return None
    literal = dtype_literal(ctx.names, expr)
    if literal in ("float16", "bfloat16"):
        return frozenset({FP16 if literal == "float16" else BF16}), True
    if literal is not None:
        return None
    value = ctx.flow.value_of(expr)
    if value is None or not value.dtypes or not value.may_be(FP16, BF16):
        return None
    return frozenset(d for d in value.dtypes if d in (FP16, BF16)), value.only(FP16, BF16)


def _arange_bounds(ctx, call: cst.Call) -> tuple[float | None, float | None]:
    """(start, end) of ``torch.arange`` as numbers when known."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    start = argument(call, "start", None)
    end = argument(call, "end", None)
    if len(positional) == 1 and end is None:
        end, start = positional[0], start
    elif len(positional) >= 2:
        start, end = positional[0], positional[1]
    start_value = number(ctx, start.value) if start is not None else None
    end_value = number(ctx, end.value) if end is not None else None
    return (start_value.value if start_value else (0.0 if start is None else None)), (end_value.value if end_value else None)


# Lengths that count a model's parts or a search's hypotheses, not tokens: far below 2048 in any
# real model or beam search.
SMALL_COUNTS = re.compile(
    r"(^|_)(n_?)?(heads?|layers?|experts?|groups?|kv_heads|beams?|beam_size)$|^num_(heads?|layers?|experts?|groups?|beams)",
    re.IGNORECASE)


def _count_name(expr: cst.BaseExpression) -> str | None:
    """``beam_size`` in ``beam_size``, ``self.beam_size``, ``beam_size * 2`` or ``2 * beam_size + 1``."""
    while isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Multiply)):
        if isinstance(expr.right, cst.Integer):
            expr = expr.left
        elif isinstance(expr.left, cst.Integer):
            expr = expr.right
        else:
            return None
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _bounded_by_count(ctx, length: cst.Name | None) -> bool:
    """``length`` is a small count, or holds ``min(...)`` of one: fairseq's beam search takes
    ``k = min(beam_size * 2, vocab - 1)`` hypotheses, at most twice the beam whatever the vocab."""
    if length is None:
        return False
    if SMALL_COUNTS.search(length.value):
        return True
    if not isinstance(length, cst.Name) or ctx.enclosing(length, cst.FunctionDef) is None:
        return False
    reaching = facts(ctx).reaching(length)
    if len(reaching) != 1:
        return False
    value = reaching[0][0]
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "min"):
        return False
    return any((name := _count_name(arg.value)) is not None and SMALL_COUNTS.search(name) for arg in value.args)


def _run_time_length(arange: cst.Call) -> cst.Name | None:
    """The name an ``arange``'s end is made of: ``n`` in ``arange(n)`` or ``arange(1, n + 1)``."""
    positional = [a for a in arange.args if a.keyword is None and not a.star]
    end = argument(arange, "end", None) or (positional[-1] if len(positional) in (1, 2) else positional[1] if positional else None)
    if end is None:
        return None
    expr = end.value
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)) and isinstance(expr.right, cst.Integer):
        expr = expr.left
    if isinstance(expr, cst.Attribute):
        return expr.attr
    return expr if isinstance(expr, cst.Name) else None


def _asserted_bound(ctx, arange: cst.Call, length: cst.Name | None) -> float | None:
    """K from ``assert n <= K`` (or ``n < K``, ``K >= n``) earlier in the function around ``arange``."""
    if length is None:
        return None
    function = ctx.enclosing(arange, cst.FunctionDef)
    if function is None:
        return None
    line = ctx.position(arange).start.line
    for node in walk(function):
        if not isinstance(node, cst.Assert) or ctx.position(node).start.line > line:
            continue
        test = node.test
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            continue
        operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
        left = test.left
        if isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)):
            left, right = right, left
        elif not isinstance(operator, (cst.LessThan, cst.LessThanEqual)):
            continue
        named = left.attr if isinstance(left, cst.Attribute) else left
        if isinstance(named, cst.Name) and named.value == length.value:
            bound = number(ctx, right)
            if bound is not None:
                return bound.value
    return None


class LowpIntegerPositions(Rule):
    """## What it does
    Flags positions built in a low-precision float dtype: `torch.arange(n, dtype=torch.bfloat16)`,
    `torch.arange(seq_len, dtype=self.inv_freq.dtype)` after the module was cast to bfloat16
    (the dtype comes from the dtype flow), and arange results cast with `.half()`, `.bfloat16()`,
    `.to(<low dtype>)` or `.type_as(<low tensor>)`. An `arange` whose bounds are literals small
    enough to be exact (<= 256 in bfloat16, <= 2048 in float16) is not flagged.

    ## Why is this bad?
    bfloat16 represents every integer only up to 256 and float16 up to 2048; above that,
    neighbouring positions collapse (`arange(4090, 4100, dtype=bfloat16)` is ten times 4096.0).
    Rotary embeddings computed from such positions give many tokens the same angle, and long
    contexts silently lose position information (huggingface/transformers#29285,
    EleutherAI/gpt-neox#1016); `inv_freq` computed in bfloat16 is off by up to 0.4 %.

    ## Example
    ```python
    t = torch.arange(self.max_seq_len, device=device, dtype=self.inv_freq.dtype)  # bfloat16
    freqs = torch.outer(t, self.inv_freq)
    ```

    ## Use instead
    ```python
    t = torch.arange(self.max_seq_len, device=device, dtype=torch.float32)
    freqs = torch.outer(t, self.inv_freq.float())
    cos, sin = freqs.cos().to(dtype), freqs.sin().to(dtype)
    ```

    ## Fix safety
    No fix: positions must stay float32 until the angles' `cos`/`sin` are taken, and where
    to cast back depends on the code that follows. High confidence when a literal bound is past
    the exact range, medium when the bound is a run-time length (sequence lengths usually are).
    """

    code = "DTL506"
    name = "lowp-integer-positions"
    summary = "Positions (arange) built in float16/bfloat16 lose integer exactness"
    queries = (
        "the dtype flow: the dtype an `arange` is built in or cast to (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the values that reach a name, and literal bounds (facts/numerics.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    triggers = ("arange",)
    # The positions end up float16/bfloat16: a dtype= or a cast the flow knows as low precision.
    required_triggers = (LOWP_TRIGGERS,)
    valid = (
        "import torch\nt = torch.arange(4096, dtype=torch.float32)\n",
        # small literal range: exact in bfloat16.
        "import torch\nidx = torch.arange(0, 128, 2, dtype=torch.bfloat16)\n",
        "import torch\npos = torch.arange(8192)\nemb = pos.float()\n",
    )
    invalid = (
        Invalid("import torch\nt = torch.arange(4090, 4100, dtype=torch.bfloat16)\n"),
        Invalid(
            "import torch\ndef rope(seq_len, inv_freq):\n    t = torch.arange(seq_len, dtype=torch.float16)\n"
            "    return torch.outer(t, inv_freq)\n"
        ),
        Invalid("import torch\ndef positions(n):\n    pos = torch.arange(n)\n    return pos.bfloat16()\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        shape = call_shape(self.ctx, node)
        if shape is None:
            return
        if shape.qualified == "torch.arange":
            dtype = argument(node, "dtype", None)
            low = _low_dtypes(self.ctx, dtype.value if dtype is not None else None)
            if low is not None:
                self._check(node, node, low, f"`dtype={self.ctx.code_for(dtype.value).strip()}`")
            return
        if shape.qualified is None and shape.receiver is not None and shape.name in CASTS:
            arange = self._arange_of(shape.receiver)
            if arange is None:
                return
            low = self._cast_target(node, shape.name)
            if low is not None:
                self._check(node, arange, low, f"`.{shape.name}(...)`")

    def _arange_of(self, expr: cst.BaseExpression, depth: int = 0) -> cst.Call | None:
        """The ``torch.arange`` call ``expr`` holds, through names, indexing and shape ops."""
        if depth > 5:
            return None
        if isinstance(expr, cst.Name):
            reaching = facts(self.ctx).reaching(expr)
            if len(reaching) != 1:
                return None
            return self._arange_of(reaching[0][0], depth + 1)
        if isinstance(expr, cst.Subscript):
            return self._arange_of(expr.value, depth + 1)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in SHAPE_OPS:
            return self._arange_of(expr.func.value, depth + 1)
        if isinstance(expr, cst.Call) and self.ctx.names.matches(expr.func, "torch.arange"):
            dtype = argument(expr, "dtype", None)
            if dtype is None or dtype_literal(self.ctx.names, dtype.value) in ("float32", "float64"):
                return expr
        return None

    def _cast_target(self, call: cst.Call, method: str) -> tuple[frozenset, bool] | None:
        if method == "half":
            return frozenset({FP16}), True
        if method == "bfloat16":
            return frozenset({BF16}), True
        value = self.ctx.flow.value_of(call)
        if value is not None and value.dtypes and value.may_be(FP16, BF16) and not value.may_be("int"):
            return frozenset(d for d in value.dtypes if d in (FP16, BF16)), value.only(FP16, BF16)
        target = argument(call, "dtype", 0)
        if method in ("to", "type") and target is not None:
            return _low_dtypes(self.ctx, target.value)
        return None

    def _check(self, node: cst.Call, arange: cst.Call, low: tuple[frozenset, bool], how: str) -> None:
        dtypes, certain = low
        limit = min(EXACT_INTEGERS[d] for d in dtypes)
        start, end = _arange_bounds(self.ctx, arange)
        if end is not None and start is not None and max(abs(start), abs(end)) <= limit + 1:
            return
        if end is not None:
            confidence = Confidence.HIGH if certain else Confidence.MEDIUM
        else:
            confidence = Confidence.MEDIUM if certain else Confidence.LOW
            length = _run_time_length(arange)
            asserted = _asserted_bound(self.ctx, arange, length)
            if asserted is not None and asserted <= limit + 1:
                return  # ``assert n <= 2048`` before ``arange(n, dtype=float16)``: exact
            if _bounded_by_count(self.ctx, length):
                # ``arange(1, num_heads + 1)``, ``arange(1, k + 1)`` with ``k = min(beam_size * 2,
                # ...)``: a count of heads, layers or hypotheses, not a sequence length; it fits
                # unless a model has thousands of heads or beams (a heuristic: low).
                confidence = Confidence.LOW
        names = " or ".join(LONG[d] for d in (FP16, BF16) if d in dtypes)
        bound = f"up to {int(end)}" if end is not None else "up to a run-time length"
        message = (
            f"positions from `{self.ctx.code_for(arange.func).strip()}(...)` ({bound}) are made {names} by {how}: "
            f"{names} holds integers exactly only up to {limit}, so larger positions collapse "
            "(4090..4099 all become 4096 in bfloat16); keep positions in float32/int64 until after cos/sin"
        )
        self.report(node, message, confidence=confidence)


# -- DTL507 ------------------------------------------------------------------------------------
# Checkpoint families trained in bfloat16 whose float16 overflow is documented (HF model docs,
# huggingface/transformers#10956 for T5, the Gemma model card); matched on the repo name.
# Other bfloat16-pretrained families (Llama 3, Mistral, BLOOM...) and checkpoints named at run
# time are not reported: whether their activations leave float16's range is not documented, and
# on unseen repositories every such finding read was false (benchmarks/LOWCONF-TRIAGE.tsv).
DOCUMENTED = ("t5", "flan-t5", "mt5", "byt5", "long-t5", "ul2", "flan-ul2", "t0", "mt0", "madlad", "gemma")
LOADERS = frozenset({"from_pretrained"})


def _family(model_id: str) -> str | None:
    """The documented family prefix of a hub id such as ``google/flan-t5-large``."""
    name = model_id.lower().rsplit("/", 1)[-1]
    for prefix in DOCUMENTED:
        if name.startswith(prefix) and (prefix != "t0" or name[2:3] in ("", "_", "p", "-")):
            return prefix
    return None


class Fp16OnBf16Pretrained(Rule):
    """## What it does
    Flags loading or casting to float16 a checkpoint from a family pretrained in bfloat16, when
    the hub id is a literal of the file (directly or through a variable):
    `from_pretrained("google/flan-t5-large", torch_dtype=torch.float16)`, `pipeline(...,
    model="google/gemma-2b", torch_dtype=torch.float16)`, or `.half()` / `.to(torch.float16)`
    on such a model, for families whose float16 overflow is documented (T5, mT5, Flan-T5, ByT5,
    UL2, T0, Gemma), when float16 is chosen on every path. Other bfloat16-trained families
    (Llama 3, Mistral, BLOOM...) and ids known only at run time are not reported: whether a
    given checkpoint's activations leave float16's range can only be known from running it, and
    on unseen repositories none of those findings was a real defect (LLaMA-1 delta scripts, GPTQ
    and OPT checkpoints, tests loading float16 on purpose).

    ## Why is this bad?
    Weights trained in bfloat16 produce activations up to float32's range; in float16 anything
    above 65504 becomes inf, and T5's feed-forward outputs do exactly that, giving NaN losses
    and empty generations (huggingface/transformers#10956). bfloat16 or float32 run them as
    trained. The model's `config.json` `torch_dtype` says how it was saved; this rule only sees
    the name, which is why it never reports high confidence.

    ## Example
    ```python
    model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-xl", torch_dtype=torch.float16)
    ```

    ## Use instead
    ```python
    model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-xl", torch_dtype=torch.bfloat16)
    ```

    ## Fix safety
    No fix: bfloat16 needs hardware support (Ampere or newer); on older GPUs float32 is the
    answer, which only the user can choose.
    """

    code = "DTL507"
    name = "fp16-on-bf16-pretrained"
    summary = "Checkpoint pretrained in bfloat16 (T5, Gemma...) loaded or cast to float16"
    queries = (
        "the hub id a load names, followed through the file's assignments (facts/numerics.py)",
        "the dtype flow: the dtype a model is loaded or cast to (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    triggers = ("from_pretrained", "pipeline")
    # ...and float16 is asked for (torch_dtype=, .half(), .to(torch.float16)).
    required_triggers = (FP16_TRIGGERS,)
    valid = (
        "import torch\nfrom transformers import AutoModelForSeq2SeqLM\n"
        "model = AutoModelForSeq2SeqLM.from_pretrained('google/flan-t5-large', torch_dtype=torch.bfloat16)\n",
        # Llama 2 was released in float16.
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf', torch_dtype=torch.float16)\n",
        # bfloat16-trained, but its float16 overflow is not documented
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Meta-Llama-3-8B', dtype=torch.float16)\n",
        # a checkpoint named at run time: which one, and how it was trained, is unknown
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "def load(model_id):\n    return AutoModelForCausalLM.from_pretrained(model_id, torch_dtype=torch.float16)\n",
        "from transformers import T5ForConditionalGeneration\nmodel = T5ForConditionalGeneration.from_pretrained('t5-base')\n",
        # a run-time checkpoint in its own dtype
        "from transformers import AutoModelForCausalLM\n"
        "def load(model_id):\n    return AutoModelForCausalLM.from_pretrained(model_id, torch_dtype='auto')\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom transformers import AutoModelForSeq2SeqLM\nname = 'google/flan-t5-xl'\n"
            "model = AutoModelForSeq2SeqLM.from_pretrained(name, torch_dtype=torch.float16)\n"
        ),
        Invalid(
            "from transformers import T5ForConditionalGeneration\n"
            "model = T5ForConditionalGeneration.from_pretrained('t5-large')\nmodel = model.half()\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        shape = call_shape(self.ctx, node)
        if shape is None:
            return
        if shape.name in LOADERS and shape.receiver is not None:
            model_id = self._model_id(argument(node, "pretrained_model_name_or_path", 0))
            self._loaded(node, model_id)
        elif shape.name == "pipeline" and (shape.qualified or "").startswith("transformers") or (
            shape.name == "pipeline" and shape.qualified is None and shape.receiver is None
            and self.ctx.names.matches(node.func, "transformers.pipeline")
        ):
            self._loaded(node, self._model_id(argument(node, "model", None)))
        elif shape.receiver is not None and shape.name in ("half", "to"):
            self._cast(node, shape)

    def _model_id(self, arg: cst.Arg | None, depth: int = 0) -> tuple[str, cst.CSTNode] | None:
        if arg is None:
            return None
        expr = arg.value
        if isinstance(expr, cst.Name) and depth < 3:
            reaching = facts(self.ctx).reaching(expr)
            if len(reaching) == 1:
                return self._model_id(cst.Arg(reaching[0][0]), depth + 1)
            return None
        text = literal_string(expr)
        return (text, expr) if text else None

    def _fp16(self, expr: cst.BaseExpression | None) -> bool | None:
        """True: float16 on every path; False: float16 on some; None: not float16."""
        if expr is None:
            return None
        if isinstance(expr, cst.SimpleString):
            return True if literal_string(expr) in ("float16", "half") else None
        literal = dtype_literal(self.ctx.names, expr)
        if literal is not None:
            return True if literal == "float16" else None
        value = self.ctx.flow.value_of(expr)
        if value is None or not value.may_be(FP16):
            return None
        return value.only(FP16)

    def _loaded(self, node: cst.Call, model_id) -> None:
        dtype = argument(node, "torch_dtype", None) or argument(node, "dtype", None)
        if model_id is None:
            return
        certain = self._fp16(dtype.value if dtype is not None else None)
        if certain is None:
            return
        self._report(node, model_id, certain, f"`{dtype.keyword.value}={self.ctx.code_for(dtype.value).strip()}`")

    def _cast(self, node: cst.Call, shape) -> None:
        if not isinstance(shape.receiver, cst.Name):
            return
        if shape.name == "to":
            target = argument(node, "dtype", None)
            if target is None:
                positional = [a for a in node.args if a.keyword is None]
                target = next((a for a in positional if dtype_literal(self.ctx.names, a.value)), None)
            certain = self._fp16(target.value if target is not None else None)
            if certain is None:
                return
        else:
            certain = True
        reaching = facts(self.ctx).reaching(shape.receiver)
        if len(reaching) != 1 or not isinstance(reaching[0][0], cst.Call):
            return
        loader = reaching[0][0]
        loader_shape = call_shape(self.ctx, loader)
        if loader_shape is None or loader_shape.name not in LOADERS:
            return
        model_id = self._model_id(argument(loader, "pretrained_model_name_or_path", 0))
        if model_id is not None:
            self._report(node, model_id, certain, f"`{self.ctx.code_for(node).strip()}`")

    def _report(self, node: cst.Call, model_id, certain: bool, how: str) -> None:
        text, _ = model_id
        prefix = _family(text)
        if prefix is None or not certain:
            return  # float16 on some paths only: the other paths may be what runs
        message = (
            f"`{text}` ({prefix} family) was pretrained in bfloat16 and is run in float16 by {how}: its activations"
            " exceed float16's 65504 and become inf/NaN (documented for this family, huggingface/transformers#10956);"
            " use bfloat16 (or float32)"
        )
        self.report(node, message, confidence=Confidence.MEDIUM)

"""Code that chooses a dtype and gets the choice wrong: DTL605 to-torch-dtype-keyword, DTL706
dtype-compared-with-string, DTL707 precision-name-mismatch, DTL708 none-dtype-cast, DTL710
fp16-and-bf16."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts import config_values, precision_flags
from dtype_lint.facts.amp import DTYPE_NAMES
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import calls_in, training_facts
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule

# How precision names are spelled in strings, flags and dict keys, and the dtype each means.
_PRECISION_WORDS = {
    "bf16": "bfloat16", "bfloat16": "bfloat16", "bfloat": "bfloat16",
    "fp16": "float16", "float16": "float16", "half": "float16",
}
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")


def _named_precision(text: str) -> str | None:
    """The low-precision dtype a key/flag name names (``"bf16-mixed"`` -> bfloat16), or None
    when it names none or both."""
    found = {_PRECISION_WORDS[w] for w in _WORD_SPLIT.split(text.lower()) if w in _PRECISION_WORDS}
    return found.pop() if len(found) == 1 else None


def _torch_dtype(ctx, expr: cst.BaseExpression) -> str | None:
    """``torch.float16`` (any alias) -> "float16"."""
    for name in ctx.names.qualified_names(expr):
        if name in DTYPE_NAMES:
            return DTYPE_NAMES[name]
    return None


def _string(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value if isinstance(expr.evaluated_value, str) else None
    return None


# -- DTL706 ------------------------------------------------------------------------------------
class DtypeComparedWithString(Rule):
    """## What it does
    Flags an equality test between a `torch.dtype` and a string: `x.dtype == "float16"`,
    `model.dtype != "bfloat16"`, `torch.get_default_dtype() == "torch.float32"`,
    `model.dtype in ("bf16", "bfloat16")` where the left side is the `.dtype` of a tensor or
    module the dtype flow knows, a torch dtype constant, or `torch.get_default_dtype()`. A
    plain variable is not flagged even where it may hold a dtype: code that accepts
    `Union[str, torch.dtype]` compares the string case on purpose.

    ## Why is this bad?
    A `torch.dtype` never equals a string, so the test is always False (`!=` always True) and
    the branch that was meant to pick or guard a precision never runs: the bfloat16 path is
    dead, or a cast meant for float16 models is applied to every model (InternLM/lmdeploy#2933:
    code written for a string `torch_dtype` broke when it was a `torch.dtype`).

    ## Example
    ```python
    if model.dtype == "bfloat16":
        scaler = None
    ```

    ## Use instead
    ```python
    if model.dtype == torch.bfloat16:
        scaler = None
    ```

    ## Fix safety
    Unsafe: it replaces a string naming a torch dtype (`"bfloat16"`, `"torch.float16"`) with
    the constant, which changes which branch runs; offered only when the string spells a torch
    dtype. High confidence: the left side is a `torch.dtype` on every path.
    """

    code = "DTL706"
    name = "dtype-compared-with-string"
    summary = "torch.dtype compared with a string (always False)"
    queries = (
        "the dtype flow: whether the compared value is the `.dtype` of a tensor or module (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    fix_safety = Safety.UNSAFE
    triggers = (exact_word("dtype"), exact_word("get_default_dtype"), exact_word("dtypes"))
    valid = (
        "import torch\nx = torch.zeros(2)\nif x.dtype == torch.bfloat16:\n    pass\n",
        # argparse strings compared with strings
        "import argparse\nargs = argparse.Namespace(dtype='bf16')\nif args.dtype == 'bf16':\n    pass\n",
        "import torch\nif str(torch.zeros(1).dtype) == 'torch.float16':\n    pass\n",
    )
    invalid = (
        Invalid(
            "import torch\nx = torch.zeros(2).half()\nif x.dtype == 'float16':\n    x = x.float()\n",
            fixed="import torch\nx = torch.zeros(2).half()\nif x.dtype == torch.float16:\n    x = x.float()\n",
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2).bfloat16()\n"
            "use_scaler = model.dtype != 'bfloat16'\n",
            fixed="import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2).bfloat16()\n"
            "use_scaler = model.dtype != torch.bfloat16\n",
        ),
        Invalid("import torch\nif torch.get_default_dtype() in ('bf16', 'bfloat16'):\n    pass\n"),
    )

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        for target in node.comparisons:
            if not isinstance(target.operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)):
                left = target.comparator
                continue
            strings = self._strings(target.comparator, membership=isinstance(target.operator, (cst.In, cst.NotIn)))
            if strings:
                self._check(node, left, strings, target.comparator)
            elif isinstance(left, cst.SimpleString) and isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                self._check(node, target.comparator, [left], left)
            left = target.comparator

    @staticmethod
    def _strings(expr: cst.BaseExpression, *, membership: bool) -> list[cst.SimpleString]:
        if isinstance(expr, cst.SimpleString):
            return [expr]
        if membership and isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            items = [e.value for e in expr.elements]
            if items and all(isinstance(i, cst.SimpleString) for i in items):
                return items  # type: ignore[return-value]
        return []

    def _check(self, node, side: cst.BaseExpression, strings: list[cst.SimpleString], compared) -> None:
        confidence = self._is_dtype(side)
        if confidence is None:
            return
        spelled = self.ctx.code_for(side).strip()
        message = (
            f"`{spelled}` is a torch.dtype and `{self.ctx.code_for(compared).strip()}` a string: they never compare "
            "equal, so this test is constant; compare with `torch.<dtype>` (or `str(dtype)`)"
        )
        fix = None
        if len(strings) == 1 and strings[0] is compared:
            fix = self._fix(strings[0])
        self.report(node, message, confidence=confidence, fix=fix)

    def _is_dtype(self, side: cst.BaseExpression) -> Confidence | None:
        # A plain name the flow calls a dtype is not enough: parameters typed
        # `Union[str, torch.dtype]` and helpers returning a dtype or "auto" hold either.
        if isinstance(side, cst.Call):
            if any(n in ("torch.get_default_dtype", "torch.get_autocast_dtype", "torch.get_autocast_gpu_dtype")
                   for n in self.ctx.names.qualified_names(side.func)):
                return Confidence.HIGH
            return None
        if isinstance(side, cst.Attribute) and _torch_dtype(self.ctx, side) is not None:
            return Confidence.HIGH  # torch.float16 spelled out (a name may be a reassigned alias)
        if isinstance(side, cst.Attribute) and side.attr.value == "dtype":
            owner = self.ctx.flow.value_of(side.value)
            if owner is not None and owner.kind in ("tensor", "module"):
                return Confidence.HIGH
        return None

    def _fix(self, string: cst.SimpleString) -> Fix | None:
        text = _string(string)
        if text is None:
            return None
        name = text if text.startswith("torch.") else f"torch.{text}"
        if name not in DTYPE_NAMES:
            return None
        torch_name, edits = self.module_for_fix("torch") or (None, ())
        if torch_name is None:
            return None
        replacement = f"{torch_name}.{name.split('.', 1)[1]}"
        return Fix(Safety.UNSAFE, (self.replace(string, replacement), *edits), "compare with the torch dtype")


# -- DTL707 ------------------------------------------------------------------------------------
class PrecisionNameMismatch(Rule):
    """## What it does
    Flags code where a name that says one low precision selects the other dtype: a mapping
    `{"bf16": torch.float16}` / `{"fp16": torch.bfloat16}`, a branch
    `if precision == "bf16": dtype = torch.float16`, and a conditional
    `torch.float16 if args.bf16 else ...`; also a branch taken for several precisions that
    selects one low dtype for all of them, where the setting's values are known: the `else` of
    `args.mixed_precision == "no"` with `choices=["no", "fp16", "bf16"]` declared, or
    `accelerator.mixed_precision != "no"` (accelerate's values: "no", "fp16", "bf16", "fp8")
    selecting `torch.float16` gives a bf16 run float16 (huggingface/diffusers 93df5bb). A
    setting with no declared choices is not read. Names are read word by word (`bf16-mixed`,
    `use_fp16`, `bfloat16`, `half`); keys naming both or neither are ignored. float32 chosen
    under a low-precision name is not a mismatch, even beside a float16 compute dtype: mixed
    precision keeps float32 master weights (GradScaler refuses float16 gradients), which is the
    QLoRA idiom `torch_dtype = torch.float32 if args.fp16 else ...` (LLaVA, qlora).

    ## Why is this bad?
    The user asks for bfloat16 and gets float16 (or the reverse): a bfloat16-pretrained model
    run in float16 overflows to inf/NaN, and float16 without a GradScaler loses its small
    gradients; in the other direction a GPU without bfloat16 raises or runs slowly. Copy-paste
    between two precision branches is the usual cause, and nothing fails at the line itself.

    ## Example
    ```python
    DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.float16}
    ```

    ## Use instead
    ```python
    DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    ```

    ## Fix safety
    Unsafe: it replaces the dtype with the one the name says, which changes the precision the
    program runs at. High confidence: the name and the dtype disagree on the line itself;
    medium, and no fix, where one branch stands for both fp16 and bf16 (it needs splitting).
    """

    code = "DTL707"
    name = "precision-name-mismatch"
    summary = "A name that says bf16 selects torch.float16 (or fp16 selects torch.bfloat16)"
    queries = (
        "the dtype constants a mapping, branch or conditional selects, as the file names them (facts/names.py, facts/amp.py); no dtype flow",
        "the values a precision setting can take: argparse `choices=`, accelerate's `Accelerator.mixed_precision` (facts/precision_flags.py)",
    )
    fix_safety = Safety.UNSAFE
    triggers = ("bf16", "bfloat", "fp16", "half", "float16")
    required_triggers = ((exact_word("float16"), exact_word("bfloat16"), exact_word("half")),)
    valid = (
        "import torch\nDTYPES = {'fp32': torch.float32, 'fp16': torch.float16, 'bf16': torch.bfloat16}\n",
        "import torch\ndtype = torch.bfloat16 if args.bf16 else torch.float16\n",
        # float32 master weights for fp16 mixed precision are correct
        "import torch\ndtype = torch.float32 if args.fp16 else torch.bfloat16\n",
        # ... also beside a float16 compute dtype on the same flag (LLaVA's and qlora's QLoRA setup)
        "import torch\ndef load(args):\n    compute = torch.float16 if args.fp16 else torch.float32\n"
        "    config.torch_dtype = torch.float32 if args.fp16 else torch.float32\n",
        # the flag admits only "no" and "fp16": its else can only be fp16
        "import torch\nparser.add_argument('--mixed_precision', default='no', choices=['no', 'fp16'])\n"
        "noise_dtype = torch.float32 if args.mixed_precision == 'no' else torch.float16\n",
        # choices not declared: the values are not known
        "import torch\nnoise_dtype = torch.float32 if args.mixed_precision == 'no' else torch.float16\n",
    )
    invalid = (
        Invalid(
            "import torch\nDTYPES = {'fp32': torch.float32, 'fp16': torch.float16, 'bf16': torch.float16}\n",
            fixed="import torch\nDTYPES = {'fp32': torch.float32, 'fp16': torch.float16, 'bf16': torch.bfloat16}\n",
        ),
        Invalid(
            "import torch\nif args.precision == 'bf16-mixed':\n    dtype = torch.half\nelse:\n    dtype = torch.float32\n",
            fixed="import torch\nif args.precision == 'bf16-mixed':\n    dtype = torch.bfloat16\nelse:\n    dtype = torch.float32\n",
        ),
        Invalid(
            "import torch\nweight_dtype = torch.bfloat16 if args.fp16 else torch.float32\n",
            fixed="import torch\nweight_dtype = torch.float16 if args.fp16 else torch.float32\n",
        ),
        # the else of a test on a flag whose declared choices include both fp16 and bf16
        Invalid(
            "import torch\nparser.add_argument('--mixed_precision', default='no', choices=['no', 'fp16', 'bf16'])\n"
            "noise_dtype = torch.float32 if args.mixed_precision == 'no' else torch.float16\n"
        ),
    )

    def visit_Dict(self, node: cst.Dict) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = _string(element.key)
                if key is not None:
                    self._check(key, element.value, repr(key))

    def visit_If(self, node: cst.If) -> None:
        named = self._condition_precision(node.test)
        where = self.ctx.code_for(node.test).strip()
        branches = self._branches(node)
        if named is not None:
            for value in _assigned_values(node.body):
                self._check_value(named, value, where)
        elif branches is not None:
            for value in _assigned_values(node.body):
                self._check_admitted(branches[0], value, f"`{where}`")
        if branches is not None and isinstance(node.orelse, cst.Else):
            for value in _assigned_values(node.orelse.body):
                self._check_admitted(branches[1], value, f"the else of `{where}`")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        named = self._condition_precision(node.test)
        where = self.ctx.code_for(node.test).strip()
        branches = self._branches(node)
        if named is not None:
            self._check_value(named, node.body, where)
        elif branches is not None:
            self._check_admitted(branches[0], node.body, f"`{where}`")
        if branches is not None and not isinstance(node.orelse, cst.IfExp):
            self._check_admitted(branches[1], node.orelse, f"the else of `{where}`")

    def _branches(self, node: cst.If | cst.IfExp) -> tuple[frozenset[str], frozenset[str]] | None:
        """The precision values (facts/precision_flags.py) for which ``node``'s body and its
        else run, narrowed by the ``if``/``elif`` (or nested conditional) tests before it on the
        same setting; None when the test is not on a setting whose values are known."""
        found = precision_flags.narrowed(self.ctx, node.test)
        if found is None:
            return None
        setting, true, false = found
        child, parent = node, self.ctx.parent(node)
        while isinstance(parent, type(node)) and parent.orelse is child:
            before = precision_flags.narrowed(self.ctx, parent.test)
            if before is None or before[0] != setting:
                break
            true, false = true & before[2], false & before[2]
            child, parent = parent, self.ctx.parent(parent)
        return true, false

    def _check_admitted(self, admitted: frozenset[str], value: cst.BaseExpression, where: str) -> None:
        """``value`` is selected for every precision in ``admitted``: a low dtype that is not
        the one each of them names is a mismatch (float32 for all of them is not: master weights)."""
        names = {_named_precision(text) for text in admitted} - {None}
        chosen = _torch_dtype(self.ctx, value) if isinstance(value, cst.Attribute) else None
        if chosen not in ("float16", "bfloat16") or not names or names == {chosen}:
            return
        other = next(text for text in sorted(admitted) if _named_precision(text) not in (None, chosen))
        self.report(
            value,
            f"{where} holds for {', '.join(repr(t) for t in sorted(admitted))} (the values the setting can take)"
            f" but selects `{self.ctx.code_for(value).strip()}` ({chosen}): a {other!r} run gets {chosen}"
            f" where {_named_precision(other)} was asked for; select the dtype per precision",
            confidence=Confidence.HIGH if len(names) == 1 else Confidence.MEDIUM,
        )

    def _condition_precision(self, test: cst.BaseExpression) -> str | None:
        """``x == "bf16"`` -> bfloat16; ``args.fp16`` / ``use_bf16`` (a flag) -> its name's dtype."""
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            if isinstance(test.comparisons[0].operator, cst.Equal):
                text = _string(test.comparisons[0].comparator) or _string(test.left)
                return _named_precision(text) if text else None
            return None
        dotted = dotted_name(test)
        if dotted is not None:
            return _named_precision(dotted.rsplit(".", 1)[-1])
        return None

    def _check(self, name: str, value: cst.BaseExpression, where: str) -> None:
        named = _named_precision(name)
        if named is not None:
            self._check_value(named, value, where)

    def _check_value(self, named: str, value: cst.BaseExpression, where: str) -> None:
        chosen = _torch_dtype(self.ctx, value) if isinstance(value, cst.Attribute) else None
        if chosen is None or chosen == named or chosen not in ("float16", "bfloat16"):
            return
        message = (
            f"`{where}` names {named} but selects `{self.ctx.code_for(value).strip()}` ({chosen}): "
            f"the run gets {chosen} where {named} was asked for"
        )
        fix = None
        torch_name = self.module_for_fix("torch")
        if torch_name is not None:
            fix = Fix(Safety.UNSAFE, (self.replace(value, f"{torch_name[0]}.{named}"), *torch_name[1]), f"select {named}")
        self.report(value, message, confidence=Confidence.HIGH, fix=fix)


# -- DTL708 ------------------------------------------------------------------------------------
class NoneDtypeCast(Rule):
    """## What it does
    Flags a cast to a name inside the branch that has just found that name to be None:
    `if dtype is None: x = x.to(dtype)`, also with `dtype=dtype` and `model.to(device, dtype)`.

    ## Why is this bad?
    `Tensor.to(None)` and `Module.to(dtype=None)` are silent no-ops: the branch meant to apply
    a default precision keeps whatever dtype the tensor had. The usual cause is an inverted
    test (`is None` for `is not None`) or a default that was never assigned, and a float32 (or
    float16) tensor then flows on where the other was intended.

    ## Example
    ```python
    if dtype is None:
        hidden = hidden.to(dtype)
    ```

    ## Use instead
    ```python
    if dtype is not None:
        hidden = hidden.to(dtype)
    ```

    ## Fix safety
    No fix: whether the test or the default is wrong needs a human. High confidence: the
    cast is a no-op on every path through the branch.
    """

    code = "DTL708"
    name = "none-dtype-cast"
    summary = "Cast to a dtype variable inside `if dtype is None:` (a no-op)"
    queries = (
        "the `if name is None:` branch and the casts in it, read from the syntax (facts/training.py); no dtype flow",
    )
    triggers = (exact_word("to"),)
    required_triggers = (("dtype",),)
    valid = (
        "import torch\ndef f(x, dtype=None):\n    if dtype is not None:\n        x = x.to(dtype)\n    return x\n",
        "import torch\ndef f(x, dtype=None):\n    if dtype is None:\n        dtype = torch.float32\n        x = x.to(dtype)\n    return x\n",
    )
    invalid = (
        Invalid("import torch\ndef f(x, dtype=None):\n    if dtype is None:\n        x = x.to(dtype)\n    return x\n"),
        Invalid("import torch\ndef f(model, device, dtype=None):\n    if dtype is None:\n        model.to(device, dtype=dtype)\n"),
    )

    def visit_If(self, node: cst.If) -> None:
        test = node.test
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return
        compare = test.comparisons[0]
        if not isinstance(compare.operator, cst.Is) or not (isinstance(compare.comparator, cst.Name) and compare.comparator.value == "None"):
            return
        name = dotted_name(test.left)
        if name is None:
            return
        for statement in node.body.body:
            if self._assigns(statement, name):
                return  # a default is set before any later cast
            for call in _calls(statement):
                if self._casts_to(call, name):
                    self.report(
                        call,
                        f"`{self.ctx.code_for(call).strip()}` runs only when `{name}` is None, and a cast to None "
                        f"is a no-op: the tensor keeps its dtype (inverted test, or a missing default?)",
                        confidence=Confidence.HIGH,
                    )

    @staticmethod
    def _assigns(statement: cst.BaseStatement, name: str) -> bool:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                    if any(dotted_name(t) == name for t in targets):
                        return True
        return False

    @staticmethod
    def _casts_to(call: cst.Call, name: str) -> bool:
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "type")):
            return False
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword in (None, "dtype") and dotted_name(arg.value) == name:
                return True
        return False


def _assigned_values(body: cst.BaseSuite) -> list[cst.BaseExpression]:
    """The right sides of the plain assignments, and the returned values, directly in a branch's body."""
    return [small.value for statement in getattr(body, "body", ()) if isinstance(statement, cst.SimpleStatementLine)
            for small in statement.body if isinstance(small, (cst.Assign, cst.Return)) and small.value is not None]


def _calls(statement: cst.CSTNode) -> list[cst.Call]:
    """The calls of a simple statement in source order (its lambdas' included)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return []
    return list(calls_in(statement, into_definitions=True))


# -- DTL605 ------------------------------------------------------------------------------------
class ToTorchDtypeKeyword(Rule):
    """## What it does
    Flags `torch_dtype=` passed where it is not a parameter: `model.to(torch_dtype=...)` and
    `tensor.to(torch_dtype=...)` on a module or tensor the dtype flow knows, and
    `save_pretrained(..., torch_dtype=...)`. `.to(torch_dtype=...)` on a receiver the flow does
    not know is reported at medium confidence unless its name says it is a pipeline (diffusers
    pipelines accepted `torch_dtype=` in `.to()` in old releases).

    ## Why is this bad?
    `torch_dtype` is a `from_pretrained` keyword. `nn.Module.to` and `Tensor.to` take `dtype`
    and raise `TypeError: to() received an invalid combination of arguments` on
    `torch_dtype=`; `save_pretrained` swallows unknown keywords, so the checkpoint is saved in
    whatever dtype the model has and the intended cast never happens.

    ## Example
    ```python
    model = model.to(torch_dtype=torch.float16)
    model.save_pretrained(out_dir, torch_dtype=torch.float16)
    ```

    ## Use instead
    ```python
    model = model.to(dtype=torch.float16)
    model.to(torch.float16).save_pretrained(out_dir)
    ```

    ## Fix safety
    Safe for `.to(torch_dtype=...)` on a known module or tensor (renamed to `dtype=`: the call
    raised before), unsafe on an unknown receiver. No fix for
    `save_pretrained`. High confidence for `.to` on a known module or tensor, medium for an
    unknown receiver and for `save_pretrained` (some wrappers do read the keyword).
    """

    code = "DTL605"
    name = "to-torch-dtype-keyword"
    summary = "torch_dtype= passed to .to() (TypeError) or save_pretrained() (ignored)"
    queries = (
        "the dtype flow: whether the receiver of `.to()` is a module or a tensor (facts/dtypes.py, computed by facts/flow/interpreter.py)",
    )
    fix_safety = Safety.SAFE
    triggers = (exact_word("torch_dtype"),)
    valid = (
        "import torch\nfrom transformers import AutoModel\nmodel = AutoModel.from_pretrained('m', torch_dtype=torch.float16)\n",
        "import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2).to(dtype=torch.float16)\n",
        # a diffusers pipeline's own .to() took torch_dtype= in older releases
        "import torch\nfrom diffusers import DiffusionPipeline\npipe = DiffusionPipeline.from_pretrained('m')\npipe.to(torch_dtype=torch.float16)\n",
    )
    invalid = (
        Invalid(
            "import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2)\nmodel = model.to(torch_dtype=torch.float16)\n",
            fixed="import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2)\nmodel = model.to(dtype=torch.float16)\n",
        ),
        Invalid("import torch\ndef export(model, out):\n    model.save_pretrained(out, torch_dtype=torch.float16)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Attribute):
            return
        keyword = next((a for a in node.args if a.keyword is not None and a.keyword.value == "torch_dtype"), None)
        if keyword is None:
            return
        method = node.func.attr.value
        if method == "to":
            owner = self.ctx.flow.value_of(node.func.value)
            if owner is not None and owner.kind in ("tensor", "module") and not self._pipeline(owner):
                confidence = Confidence.HIGH
            elif (owner is None or owner.kind == "unknown") and "pipe" not in self.ctx.code_for(node.func.value).lower():
                confidence = Confidence.MEDIUM  # a diffusers pipeline's .to() took torch_dtype= in old releases
            else:
                return
            # safe where the receiver surely is a module or tensor: the call raised before
            safety = Safety.SAFE if confidence is Confidence.HIGH else Safety.UNSAFE
            fix = Fix(safety, (self.replace(keyword.keyword, "dtype"),), "use dtype=")
            self.report(
                node,
                f"`{self.ctx.code_for(node.func).strip()}(torch_dtype=...)`: `.to()` has no `torch_dtype` parameter "
                "and raises TypeError; use `dtype=`",
                confidence=confidence,
                fix=fix,
            )
        elif method == "save_pretrained":
            self.report(
                node,
                "`save_pretrained()` ignores `torch_dtype=`: the checkpoint keeps the model's current dtype; "
                "cast the model first (`model.to(dtype)`)",
                confidence=Confidence.MEDIUM,
            )

    @staticmethod
    def _pipeline(owner) -> bool:
        info = owner.info if isinstance(owner.info, str) else ""
        return "Pipeline" in info


# -- DTL710 ------------------------------------------------------------------------------------
_TRAINER_ARGUMENTS = ("TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "DPOConfig", "GRPOConfig",
                      "ORPOConfig", "KTOConfig", "RewardConfig")


class Fp16AndBf16(Rule):
    """## What it does
    Flags a `TrainingArguments(...)` (also `Seq2SeqTrainingArguments` and trl's `*Config`) that
    can get both `fp16=True` and `bf16=True`: each given as a keyword (`True`, a ternary with a
    `True` branch, a config setting), or through `**kwargs` built from a dict literal, a config
    file's section (`device_args = dict(config["cuda"])` with `fp16: true` in config.yaml) and
    `kwargs["bf16"] = True` assignments. Command-line flags (`fp16=args.fp16`) are the user's
    choice and are not followed.

    ## Why is this bad?
    transformers refuses the combination: `ValueError: At most one of fp16 and bf16 can be True,
    but not both`. Typically a config file turns one on and the code adds the other for the
    GPU it finds (`if torch.cuda.is_available(): device_args["bf16"] = True`), so the script
    runs on a CPU and fails on the first GPU machine.

    ## Example
    ```python
    device_args = dict(config["cuda"])  # config.yaml: cuda: {fp16: true}
    if torch.cuda.is_available():
        device_args["bf16"] = True
    args = TrainingArguments(output_dir="out", **device_args)
    ```

    ## Use instead
    ```python
    device_args = dict(config["cuda"])
    if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        device_args.update(bf16=True, fp16=False)
    args = TrainingArguments(output_dir="out", **device_args)
    ```

    ## Fix safety
    No fix: which precision to keep needs a human. High confidence when both are `True` on
    every path, medium when one is a reachable configuration (a branch, a config setting).
    """

    code = "DTL710"
    name = "fp16-and-bf16"
    summary = "TrainingArguments that can get both fp16=True and bf16=True (ValueError)"
    queries = (
        "the `fp16=`/`bf16=` values a `TrainingArguments` call may get, through `**kwargs` dicts and assignments (facts/training.py)",
        "the values of settings read from config files and objects (facts/config_values.py)",
    )
    triggers = ("Arguments", "Config")
    required_triggers = ((exact_word("bf16"), exact_word("fp16")),)
    valid = (
        "from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=True, bf16=False)\n",
        "from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=args.fp16, bf16=args.bf16)\n",
        "import torch\nfrom transformers import TrainingArguments\nkwargs = dict(fp16=True)\n"
        "if torch.cuda.is_bf16_supported():\n    kwargs['bf16'] = True\n    kwargs['fp16'] = False\n"
        "args = TrainingArguments('out', **kwargs)\n",
    )
    invalid = (
        Invalid("from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=True, bf16=True)\n"),
        Invalid(
            "import torch\nfrom transformers import TrainingArguments\nkwargs = {'fp16': True}\n"
            "if torch.cuda.is_available():\n    kwargs['bf16'] = True\nargs = TrainingArguments('out', **kwargs)\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        if name not in _TRAINER_ARGUMENTS:
            return
        states: dict[str, list[tuple[bool, str]]] = {"fp16": [], "bf16": []}  # (certain, where)
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in states:
                states[arg.keyword.value].extend(self._keyword_states(arg.value, arg.keyword.value))
            elif arg.star == "**":
                for key, found in self._unpacked(arg.value, node).items():
                    states[key].extend(found)
        if not (states["fp16"] and states["bf16"]):
            return
        certain = all(any(c for c, _ in states[key]) for key in states)
        fp16, bf16 = (next((w for c, w in states[k] if c), states[k][0][1]) for k in ("fp16", "bf16"))
        self.report(
            node,
            f"`{name}(...)` can get both fp16=True ({fp16}) and bf16=True ({bf16}): transformers raises"
            " \"At most one of fp16 and bf16 can be True, but not both\"; turn the other one off where one is chosen",
            confidence=Confidence.HIGH if certain else Confidence.MEDIUM,
        )

    def _keyword_states(self, value: cst.BaseExpression, key: str = "") -> list[tuple[bool, str]]:
        """(on every path, where) for a value that is True on some path."""
        spelled = f"`{key}={self.ctx.code_for(value).strip()}`"
        if isinstance(value, cst.Name) and value.value == "True":
            return [(True, spelled)]
        if isinstance(value, cst.IfExp) and any(isinstance(b, cst.Name) and b.value == "True" for b in (value.body, value.orelse)):
            return [(False, spelled)]
        return [(False, s.describe()) for s in config_values.settings_of(self.ctx, value) if s.value is True]

    def _unpacked(self, value: cst.BaseExpression, call: cst.Call) -> dict[str, list[tuple[bool, str]]]:
        """The fp16/bf16 a ``**kwargs`` may carry: its dict literal or config section, and the
        ``kwargs["bf16"] = True`` assignments of the same scope."""
        found: dict[str, list[tuple[bool, str]]] = {}
        name = dotted_name(value)
        sources = [value]
        if name is not None:
            sources = [assigned for _, assigned in training_facts(self.ctx).assignments.get(name, ())] or sources
        single = len(sources) == 1
        for source in sources:
            if isinstance(source, cst.Dict):
                for element in source.elements:
                    if isinstance(element, cst.DictElement) and _string(element.key) in ("fp16", "bf16"):
                        for certain, where in self._keyword_states(element.value, _string(element.key)):
                            found.setdefault(_string(element.key), []).append((certain and single, where))
            elif isinstance(source, cst.Call) and dotted_name(source.func) == "dict":
                for arg in source.args:
                    if arg.keyword is not None and arg.keyword.value in ("fp16", "bf16"):
                        for certain, where in self._keyword_states(arg.value, arg.keyword.value):
                            found.setdefault(arg.keyword.value, []).append((certain and single, where))
            for key, settings in config_values.subtree_of(self.ctx, source).items():
                if key in ("fp16", "bf16"):
                    found.setdefault(key, []).extend((False, s.describe()) for s in settings if s.value is True)
        if name is not None:
            scope = self.ctx.enclosing(call, cst.FunctionDef)
            for node in self.ctx.all_nodes:
                if type(node) is not cst.Assign or self.ctx.enclosing(node, cst.FunctionDef) is not scope:
                    continue
                for target in node.targets:
                    target = target.target
                    if isinstance(target, cst.Subscript) and dotted_name(target.value) == name and len(target.slice) == 1 \
                            and isinstance(target.slice[0].slice, cst.Index):
                        key = _string(target.slice[0].slice.value)
                        if key in ("fp16", "bf16"):
                            branch = self.ctx.enclosing(node, cst.If)
                            inside = branch is not None and self.ctx.enclosing(branch, cst.FunctionDef) is scope
                            where = f"`{self.ctx.code_for(node).strip()}`, line {self.ctx.position(node).start.line}"
                            if inside:
                                where += f", when `{self.ctx.code_for(branch.test).strip()}`"
                            other = "bf16" if key == "fp16" else "fp16"
                            if inside and self._turns_off(branch, name, other):
                                found.pop(other, None)  # the branch that turns one on turns the other off
                                continue
                            found.setdefault(key, []).extend(
                                (certain and not inside, where) for certain, _ in self._keyword_states(node.value))
        return found

    def _turns_off(self, branch: cst.If, name: str, key: str) -> bool:
        """``kwargs["fp16"] = False`` in the branch."""
        text = self.ctx.code_for(branch.body)
        return any(f"{name}[{quote}{key}{quote}] = False" in text for quote in ("'", '"'))

"""DTL6xx: loading checkpoints and pretrained models, and exporting tensors, at the right dtype."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts import pipeline_outputs
from dtype_lint.facts.flow.library import LOWP_TRIGGERS
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import (
    assigned_name, call_name, is_true, keyword, positional, receiver, string_value, training_facts,
)
from dtype_lint.findings import Confidence, Edit, Fix, Safety
from dtype_lint.prefilter import exact_word
from dtype_lint.facts.flow.checkpoint_loads import CheckpointOrigin
from dtype_lint.rules.base import Invalid, Rule

# transformers renamed ``torch_dtype=`` to ``dtype=`` in this release (huggingface/transformers#39782).
DTYPE_KWARG_RELEASE = (4, 56)
MODEL_CLASS = re.compile(r"Model|For[A-Z]")
QUANTIZE_KEYWORDS = ("load_in_8bit", "load_in_4bit")
# Optimizer classes by their last name (torch.optim, bitsandbytes, transformers, timm).
OPTIMIZER_NAME = re.compile(r"^(Paged)?(Adam|AdamW|SGD|RMSprop|Adagrad|Adafactor|Lion|LAMB|Lamb|Adan|Sophia)\w*$")
TRAINER_NAME = re.compile(r"^\w*Trainer$")


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    return tuple(int(part) for part in text.split("."))


def _is_transformers_loader(ctx, call: cst.Call) -> bool:
    """``AutoModelForCausalLM.from_pretrained`` and friends, imported from transformers."""
    if call_name(call) not in ("from_pretrained", "from_config"):
        return False
    owner = receiver(call)
    if owner is None:
        return False
    # Models only: tokenizers, processors and configs take no dtype (the rename is modeling's).
    return any(
        q.startswith("transformers.") and MODEL_CLASS.search(q.rsplit(".", 1)[-1])
        for q in ctx.names.qualified_names(owner)
    )


class TorchDtypeKwarg(Rule):
    """## What it does
    Flags `from_pretrained(..., torch_dtype=...)` on Hugging Face transformers classes.

    ## Why is this bad?
    transformers 4.56 renamed the argument to `dtype` (huggingface/transformers#39782); the old
    spelling logs "`torch_dtype` is deprecated! Use `dtype` instead!" on every load and will go.
    diffusers still spells it `torch_dtype`, so its pipelines are not flagged.

    Which spelling is right depends on the transformers release the project supports: set
    `target-transformers = "4.56"` (or later) in `[tool.dtype-lint]` to get the rename as a fix;
    a lower target silences the rule, since `dtype=` is not understood before 4.56.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.bfloat16)
    ```

    ## Fix safety
    Safe, and offered only when `target-transformers` is 4.56 or later: from that release on
    both keywords mean the same thing. Without the setting the finding has no fix, because on an
    older transformers `dtype=` would be ignored and the model would load in float32. A call that
    already passes `dtype=` gets no fix.
    """

    code = "DTL601"
    name = "torch-dtype-kwarg"
    summary = "`torch_dtype=` in transformers `from_pretrained` (renamed `dtype=` in 4.56)"
    queries = (
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "the oldest transformers the project supports (`target-transformers`, config.py, read from its dependency declarations by targets.py)",
    )
    fix_safety = Safety.SAFE
    # The ``torch_dtype=`` keyword, on a class imported from ``transformers`` (``_is_transformers_loader``).
    triggers = (exact_word("torch_dtype"),)
    required_triggers = ((exact_word("transformers"),),)
    valid = (
        "from transformers import AutoModel\nimport torch\nmodel = AutoModel.from_pretrained('bert-base-uncased', dtype=torch.float16)\n",
        "import torch\nfrom diffusers import StableDiffusionPipeline\npipe = StableDiffusionPipeline.from_pretrained(path, torch_dtype=torch.float16)\n",
        "import torch\nmodel = build_model(torch_dtype=torch.bfloat16)\n",
        "import torch\nfrom transformers import AutoImageProcessor\nproc = AutoImageProcessor.from_pretrained(path, torch_dtype=torch.float16)\n",
    )
    invalid = (
        # At the default settings (no target-transformers) the rename is withheld, so the fixed
        # text is the source itself; tests/test_b2_rules.py checks the rename under 4.56.
        Invalid(
            "import torch\nimport transformers\nmodel = transformers.AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)\n",
            fixed="import torch\nimport transformers\nmodel = transformers.AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)\n",
        ),
        Invalid(
            "from transformers import AutoModelForSeq2SeqLM as Seq2Seq\nmodel = Seq2Seq.from_pretrained('t5-small', torch_dtype='auto')\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        old = next((arg for arg in node.args if arg.keyword is not None and arg.keyword.value == "torch_dtype"), None)
        if old is None or not _is_transformers_loader(self.ctx, node):
            return
        target = _version(self.ctx.settings.target_transformers)
        if target is not None and target < DTYPE_KWARG_RELEASE:
            return
        value = self.ctx.code_for(old.value)
        if target is None:
            message = (
                f"`torch_dtype={value}` is deprecated since transformers 4.56; use `dtype={value}`"
                " (set `target-transformers` to get the rename as a fix)"
            )
            self.report(old.keyword, message, confidence=Confidence.MEDIUM)
            return
        fix = None
        if keyword(node, "dtype") is None:
            fix = Fix(Safety.SAFE, (self.replace(old.keyword, "dtype"),), "rename torch_dtype= to dtype=")
        message = f"`torch_dtype={value}` is deprecated since transformers 4.56; use `dtype={value}`"
        self.report(old.keyword, message, confidence=Confidence.HIGH, fix=fix)


class QuantizedFullFinetune(Rule):
    """## What it does
    Flags a model loaded quantized (`load_in_8bit=True`, `load_in_4bit=True`,
    `quantization_config=...`) that is then handed to a `Trainer` or an optimizer, in a file that
    attaches no adapters (no `get_peft_model`, `prepare_model_for_kbit_training`, `LoraConfig`,
    `peft_config=`).

    ## Why is this bad?
    Int8 and 4-bit weights are not trainable floating-point parameters: a full fine-tune of a
    quantized model either fails ("You cannot perform fine-tuning on purely quantized models.
    Please attach trainable adapters on top of the quantized model") or trains nothing. The advice
    that "INT8/INT4 are not for fine-tuning" holds for full fine-tuning; QLoRA, which trains
    float adapters on a frozen quantized base, is the way to fine-tune such a model
    (huggingface/peft#1249).

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)
    model = prepare_model_for_kbit_training(model)
    model = get_peft_model(model, LoraConfig(r=16, task_type="CAUSAL_LM"))
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    ```

    ## Fix safety
    No fix: which adapters to attach is a modelling choice.
    """

    code = "DTL603"
    name = "quantized-full-finetune"
    summary = "Quantized model trained without adapters"
    queries = (
        "the file's calls: quantized loads, the `Trainer` or optimizer the model goes to, and whether it uses PEFT (facts/training.py)",
    )
    # A quantizing keyword of a ``from_pretrained`` call, and a ``*Trainer`` or an optimizer
    # (OPTIMIZER_NAME) that trains the model.
    triggers = (exact_word("load_in_8bit"), exact_word("load_in_4bit"), exact_word("quantization_config"))
    required_triggers = (
        (exact_word("from_pretrained"),),
        ("Trainer", "Adam", "SGD", "RMSprop", "Adagrad", "Adafactor", "Lion", "LAMB", "Lamb", "Adan", "Sophia"),
    )
    valid = (
        "from transformers import AutoModelForCausalLM, Trainer\nfrom peft import get_peft_model, LoraConfig\n"
        "model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)\n"
        "model = get_peft_model(model, LoraConfig(r=8))\ntrainer = Trainer(model=model, args=args)\n",
        "from transformers import AutoModelForCausalLM\nmodel = AutoModelForCausalLM.from_pretrained(name, load_in_4bit=True)\n"
        "out = model.generate(**inputs)\n",
        "from transformers import AutoModelForCausalLM\nimport torch\nmodel = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=False)\n"
        "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)\n",
        "import torch\nfrom transformers import AutoModelForCausalLM\ndef test_prepare_int8():\n"
        "    model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)\n    accelerator.prepare(model)\n"
        "def test_sgd():\n    model = torch.nn.Linear(2, 2)\n    sgd = torch.optim.SGD(model.parameters(), lr=0.1)\n",
    )
    invalid = (
        Invalid(
            "from transformers import AutoModelForCausalLM, Trainer\n"
            "model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)\n"
            "trainer = Trainer(model=model, args=args, train_dataset=ds)\n"
        ),
        Invalid(
            "import torch\nfrom transformers import AutoModelForCausalLM, BitsAndBytesConfig\n"
            "bnb = BitsAndBytesConfig(load_in_4bit=True)\n"
            "model = AutoModelForCausalLM.from_pretrained(name, quantization_config=bnb)\n"
            "optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)\n"
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        facts = training_facts(self.ctx)
        if facts.uses_peft:
            return
        quantized: dict[str, tuple[cst.Call, str]] = {}
        for call in facts.calls:
            if call_name(call) != "from_pretrained":
                continue
            reason = self._quantization(call)
            name = assigned_name(self.ctx, call)
            if reason and name:
                quantized[name] = (call, reason)
        if not quantized:
            return
        for call in facts.calls:
            trained = self._trained_model(call)
            if trained not in quantized:
                continue
            load, reason = quantized[trained]
            # The same variable in another function (a test suite's ``model``) is another model.
            same_scope = self.ctx.enclosing(load, cst.FunctionDef) is self.ctx.enclosing(call, cst.FunctionDef)
            if not same_scope or self.ctx.position(load).start.line > self.ctx.position(call).start.line:
                continue
            line = self.ctx.position(load).start.line
            what = f"`{call_name(call)}`"
            message = (
                f"`{trained}` is loaded quantized at line {line} (`{reason}`) and trained by {what} with no"
                " adapters in this file: quantized weights cannot be fully fine-tuned; attach LoRA"
                " adapters (`prepare_model_for_kbit_training` + `get_peft_model`)"
            )
            self.report(call, message, confidence=Confidence.MEDIUM)

    def _quantization(self, call: cst.Call) -> str | None:
        for name in QUANTIZE_KEYWORDS:
            if is_true(keyword(call, name)):
                return f"{name}=True"
        config = keyword(call, "quantization_config")
        if config is not None and not (isinstance(config, cst.Name) and config.value == "None"):
            return f"quantization_config={self.ctx.code_for(config)}"
        return None

    def _trained_model(self, call: cst.Call) -> str | None:
        """The model a Trainer or an optimizer takes, by its dotted name."""
        name = call_name(call)
        if TRAINER_NAME.match(name):
            model = keyword(call, "model")
            if model is None:
                model = positional(call, 0)
            return dotted_name(model) if model is not None else None
        if OPTIMIZER_NAME.match(name):
            params = keyword(call, "params")
            if params is None:
                params = positional(call, 0)
            if isinstance(params, cst.Call) and call_name(params) in ("parameters", "named_parameters"):
                owner = receiver(params)
                return dotted_name(owner) if owner is not None else None
        return None


class CkptDtypeLoad(Rule):
    """## What it does
    Flags `load_state_dict(..., assign=True)` into a module the analysis knows is float16 or
    bfloat16. In a project check, also a tensor of a checkpoint that the project saves in low precision
    (`torch.save({k: v.half() for k, v in sd.items()}, path)` in another file) assigned into a
    parameter of a module that is not of that dtype: `layer.weight.data = state[k]`,
    `layer.weight = nn.Parameter(state[k])` (medium: the load is matched to the save by its keys,
    never by path; a save filtered with `if "lora_" in k` matches keys whose text holds `lora_`).
    A model cast inside `with torch.device("meta"):` or `init_empty_weights()` is not reported: it
    has no weights yet, `assign=True` is how it is filled, and its dtype is then the checkpoint's,
    which the analysis cannot see (FLUX's loader casts the empty model to the dtype its bf16
    checkpoints have).

    ## Why is this bad?
    `load_state_dict` copies values into the existing parameters, casting them to the module's
    dtype; with `assign=True` it instead *replaces* the parameters with the checkpoint's tensors,
    dtype and all. A module cast to bf16 and then loaded with `assign=True` from a float32
    checkpoint is float32 again, while the code around it still feeds it bf16 inputs ("mat1 and
    mat2 must have the same dtype"). A plain `load_state_dict` of a float32 checkpoint into a
    float16 module is not reported: it would overflow only weights beyond 65504, which trained
    weights seldom hold (on unseen repositories it was float16 inference as intended). Assigning a checkpoint's tensor to
    `.weight.data` or wrapping it in `nn.Parameter` has the effect of `assign=True`: a float16
    adapter saved to halve its size, installed into a float32 base, makes the layer mix dtypes
    ("expected scalar type Float but found Half", huggingface/peft#88).

    ## Example
    ```python
    model = Net().to(torch.bfloat16)
    model.load_state_dict(torch.load("ckpt.pt"), assign=True)
    ```

    ```python
    # save_adapter.py
    torch.save({k: v.half() for k, v in model.state_dict().items() if "lora_" in k}, path)
    # inference.py
    lora.lora_A.weight.data = state[f"{name}.lora_A"]
    ```

    ## Use instead
    ```python
    model = Net()
    model.load_state_dict(torch.load("ckpt.pt"), assign=True)
    model.to(torch.bfloat16)  # cast after loading
    ```
    ```python
    lora.lora_A.weight.data = state[f"{name}.lora_A"].to(module.weight.dtype)
    ```

    ## Fix safety
    No fix: moving the cast after the load changes which dtype later code sees.
    """

    code = "DTL602"
    name = "ckpt-dtype-load"
    summary = "Checkpoint loaded into a cast model (dtype replaced or overflowed)"
    queries = (
        "the dtype flow: the dtype of the module a checkpoint is loaded into, and its casts (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "in a project check, the dtype a checkpoint was saved in by another file (project/checkpoints.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    # A ``load_state_dict`` call into a float16/bfloat16 module (``value.low_precision``).
    triggers = (exact_word("load_state_dict"),)
    required_triggers = (LOWP_TRIGGERS,)
    valid = (
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4)\nmodel.load_state_dict(torch.load('ckpt.pt'), assign=True)\nmodel.to(torch.bfloat16)\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4).to(torch.bfloat16)\nmodel.load_state_dict(torch.load('ckpt.pt'))\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4).half()\nsd = torch.load('ckpt.pt')\n"
        "model.load_state_dict({k: v.half() for k, v in sd.items()})\n",
        # copied into float16: only values beyond 65504 would overflow, which weights seldom hold
        "import torch\nfrom torch import nn\nnet = nn.Linear(4, 4)\nnet.half()\nnet.load_state_dict(torch.load('fp32.pt'))\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4).to(torch.bfloat16)\n"
            "model.load_state_dict(torch.load('ckpt.pt'), assign=True)\n"
        ),
        Invalid(
            "import torch\nfrom torch import nn\nnet = nn.Linear(4, 4)\nnet.half()\n"
            "net.load_state_dict(torch.load('fp32.pt'), strict=False, assign=True)\n"
        ),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        """``layer.weight.data = state[k]`` / ``layer.weight = nn.Parameter(state[k])`` with a tensor of
        a checkpoint the project saves in low precision (project/checkpoints.py)."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Attribute):
            return
        target = node.targets[0].target
        value = node.value
        if isinstance(value, cst.Call) and self.ctx.names.matches(value.func, "torch.nn.Parameter") and value.args:
            value = value.args[0].value
        elif target.attr.value != "data":
            return
        tensor = self.ctx.flow.value_of(value)
        origin = tensor.origin if tensor is not None and tensor.kind == "tensor" else None
        if not isinstance(origin, CheckpointOrigin) or not tensor.low_precision:
            return
        parameter = target.value if target.attr.value == "data" else target
        if not isinstance(parameter, cst.Attribute):
            return
        owner = self.ctx.flow.value_of(parameter.value)
        if owner is not None and owner.known and owner.dtypes <= tensor.dtypes:
            return  # a module of the checkpoint's dtype: nothing changes
        if (owner is None or not owner.known) and any(cast.dtypes & tensor.dtypes for cast in self.ctx.flow.module_casts):
            return  # the file casts modules to that dtype: the owner may be one of them
        was = f"{owner.describe()}" if owner is not None and owner.known else "float32 (nothing in this file casts it)"
        self.report(
            node,
            f"`{self.ctx.code_for(parameter)}` is replaced by a {tensor.describe()} tensor from {origin.describe()},"
            f" while `{self.ctx.code_for(parameter.value)}` is {was}: assigning a tensor (unlike `load_state_dict`,"
            f" which copies into the existing dtype) changes the parameter's dtype, and the module then mixes"
            f" dtypes (expected scalar type Float but found Half); convert with"
            f" `.to({self.ctx.code_for(parameter)}.dtype)` or use `load_state_dict`",
            confidence=Confidence.MEDIUM,
        )

    def visit_Call(self, node: cst.Call) -> None:
        if call_name(node) != "load_state_dict":
            return
        owner = receiver(node)
        value = self.ctx.flow.value_of(owner) if owner is not None else None
        if value is None or value.kind != "module" or not value.low_precision:
            return
        if not is_true(keyword(node, "assign")):
            return
        low = [dtype for dtype in ("fp16", "bf16") if value.may_be(dtype)]
        if all(self._on_meta_device(value.origin_of(dtype)) for dtype in low):
            return  # an empty model: `assign=True` is how it is filled, in the checkpoint's (unknown) dtype
        self.report(
            node,
            f"`{self.ctx.code_for(owner)}` is {value.describe()} {value.since(low[0])}; `assign=True` replaces its"
            " parameters with the checkpoint's tensors, so it takes the checkpoint's dtype (float32 for most"
            " checkpoints) and low-precision inputs no longer match; load first, then cast",
            confidence=Confidence.MEDIUM if value.certain else Confidence.LOW,
        )


    def _on_meta_device(self, origin) -> bool:
        """The cast ran inside ``with torch.device("meta"):`` (or accelerate's ``init_empty_weights()``):
        the module has no weights yet, and its dtype after ``load_state_dict(..., assign=True)`` is the
        checkpoint's, which a static analysis does not know (FLUX's loader, bf16 safetensors)."""
        current = self.ctx.parent(origin.node) if origin is not None and origin.node is not None else None
        while current is not None:
            if isinstance(current, cst.With):
                for item in current.items:
                    call = item.item
                    if not isinstance(call, cst.Call):
                        continue
                    if self.ctx.names.matches(call.func, "torch.device") and call.args \
                            and string_value(call.args[0].value) == "meta":
                        return True
                    if call_name(call) == "init_empty_weights":
                        return True
            current = self.ctx.parent(current)
        return False


NUMPY_CONVERTERS = ("numpy.asarray", "numpy.array", "numpy.asanyarray")


class Bf16NumpyExport(Rule):
    """## What it does
    Flags `.numpy()`, `np.asarray(t)` / `np.array(t)` and any other numpy function given the
    tensor (`np.mean(t)`, `np.percentile(t, 50)`, `np.stack([t, u])`) on a tensor the analysis
    knows may be bfloat16: the output of a bf16 model or of a bf16 autocast region, a `.to(torch.bfloat16)`
    result, followed through `.detach()`, `.cpu()` and other dtype-keeping steps.

    In a diffusers pipeline (a `DiffusionPipeline` subclass), the output of a component that runs
    in the pipeline's `torch_dtype` (`self.vocoder(mel)`, `self.vae.decode(z).sample`) is
    bfloat16 when the pipeline is loaded with `torch_dtype=torch.bfloat16`: such an output
    followed through dtype-keeping steps to a NumPy conversion in the same method is reported
    there, and one a method returns as is to a caller of the class that converts it is reported
    at the `return`, where the `.float()` belongs (huggingface/diffusers 90eac14; medium).

    ## Why is this bad?
    numpy has no bfloat16: the conversion raises "TypeError: Got unsupported ScalarType
    BFloat16" (mindee/doctr#1342), typically at the end of an evaluation or an embedding export,
    after all the compute has been spent.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        emb = encoder(x)
    vectors = emb.detach().cpu().numpy()
    ```

    ## Use instead
    ```python
    vectors = emb.detach().cpu().float().numpy()
    ```

    ## Fix safety
    Unsafe: the fix inserts `.float()` before `.numpy()`. For a tensor that is certainly bf16 this
    only turns a crash into float32 values; where the dtype is a union (fp16 on some runs) it also
    changes the array's dtype on runs that worked.
    """

    code = "DTL604"
    name = "bf16-numpy-export"
    summary = "`.numpy()` on a bfloat16 tensor"
    queries = (
        "the dtype flow: whether the tensor may be bfloat16 (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
        "a library object's component output in the library's low dtype, followed to a NumPy conversion (facts/pipeline_outputs.py, catalog in facts/lowp_contract.py)",
    )
    fix_safety = Safety.UNSAFE
    # ``.numpy()``, or ``numpy.asarray``/``array``/``asanyarray`` (imported from numpy), on a tensor that
    # may be bfloat16: a bf16 spelling, or an autocast region (CPU autocast defaults to bf16).
    triggers = (exact_word("numpy"),)
    # a diffusers pipeline runs in bfloat16 without spelling it (facts/pipeline_outputs.py)
    required_triggers = ((exact_word("bfloat16"), exact_word("bf16"), exact_word("BFloat16Tensor"), "autocast",
                          "DiffusionPipeline"),)
    valid = (
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4).to(torch.bfloat16)\nout = model(x)\ny = out.float().numpy()\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4).to(torch.bfloat16)\npred = model(x).argmax(-1).cpu().numpy()\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4)\nout = model(x)\ny = out.detach().numpy()\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4).to(torch.bfloat16)\nout = model(x)\ny = out.detach().cpu().numpy()\n",
            fixed="import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4).to(torch.bfloat16)\nout = model(x)\ny = out.detach().cpu().float().numpy()\n",
        ),
        Invalid(
            "import numpy as np\nimport torch\nfrom torch import nn\nnet = nn.Linear(8, 8).cuda()\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    h = net(x.cuda())\narr = np.asarray(h.cpu())\n"
        ),
        Invalid("import numpy as np\nimport torch\nscores = torch.rand(16).bfloat16()\nthreshold = np.percentile(scores, 90)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if call_name(node) == "numpy" and isinstance(node.func, cst.Attribute) and not node.args:
            tensor = node.func.value
            fix_at = tensor
        elif self.ctx.names.matches(node.func, *NUMPY_CONVERTERS) and node.args:
            tensor = node.args[0].value
            fix_at = None
        elif node.args and node.args[0].keyword is None and self._numpy_function(node.func):
            # np.mean(t), np.stack([t, u]), np.percentile(t, 50): numpy converts its input first
            first = node.args[0].value
            items = [e.value for e in first.elements] if isinstance(first, (cst.List, cst.Tuple)) else [first]
            tensor = next((i for i in items if self._may_be_bf16(i)), None)
            if tensor is None:
                return
            fix_at = None
        else:
            return
        value = self.ctx.flow.value_of(tensor)
        if value is None or value.kind != "tensor" or not value.may_be("bf16"):
            return
        certain = value.certain
        fix = None
        if fix_at is not None:
            end = self.ctx.position(fix_at).end
            fix = Fix(
                Safety.UNSAFE,
                (Edit(end.line, end.column + 1, end.line, end.column + 1, ".float()"),),
                "convert to float32 before numpy",
            )
        via = " under bf16 autocast" if value.autocast == "bf16" else ""
        self.report(
            node,
            f"`{self.ctx.code_for(tensor)}` is {value.describe()} {value.since('bf16')}{via}: numpy has no bfloat16"
            " (\"Got unsupported ScalarType BFloat16\"); convert with `.float()` first",
            confidence=Confidence.HIGH if certain else Confidence.MEDIUM,
            fix=fix,
        )

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        # A pipeline component's output, in the pipeline's torch_dtype (bfloat16 among them),
        # converted to NumPy (facts/pipeline_outputs.py).
        for found in pipeline_outputs.exports_in(self.ctx, node):
            line = self.ctx.position(found.conversion).start.line
            source = self.ctx.code_for(found.source)
            if found.returned_by is None:
                where = f"`{self.ctx.code_for(found.conversion)}` converts it"
            else:
                where = f"`{found.returned_by}` returns it as is and line {line} converts it (`{self.ctx.code_for(found.conversion)}`)"
            self.report(
                found.at,
                f"`{source if len(source) < 60 else source[:57] + '...'}` gives a tensor in the pipeline's dtype ({found.why},"
                f" bfloat16 among them) and {where} to NumPy: numpy has no bfloat16 (\"Got unsupported ScalarType"
                " BFloat16\"); convert with `.float()` first",
                confidence=Confidence.MEDIUM,
            )

    def _numpy_function(self, func: cst.BaseExpression) -> bool:
        return any(name.startswith("numpy.") for name in self.ctx.names.qualified_names(func))

    def _may_be_bf16(self, expr: cst.BaseExpression) -> bool:
        value = self.ctx.flow.value_of(expr)
        return value is not None and value.kind == "tensor" and value.may_be("bf16")

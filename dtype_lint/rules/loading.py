"""DTL6xx: loading checkpoints and pretrained models, and exporting tensors, at the right dtype."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import call_name, is_true, keyword, positional, receiver, training_facts
from dtype_lint.findings import Confidence, Fix, Safety
from dtype_lint.rules.base import Invalid, Rule

# transformers renamed ``torch_dtype=`` to ``dtype=`` in this release (huggingface/transformers#39782).
DTYPE_KWARG_RELEASE = (4, 56)
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
    return owner is not None and any(q.startswith("transformers.") for q in ctx.names.qualified_names(owner))


def _assigned_name(ctx, call: cst.Call) -> str | None:
    """``model`` in ``model = AutoModel.from_pretrained(...)``."""
    parent = ctx.parent(call)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        return dotted_name(parent.targets[0].target)
    if isinstance(parent, cst.AnnAssign):
        return dotted_name(parent.target)
    return None


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
    fix_safety = Safety.SAFE
    triggers = ("torch_dtype",)
    valid = (
        "from transformers import AutoModel\nimport torch\nmodel = AutoModel.from_pretrained('bert-base-uncased', dtype=torch.float16)\n",
        "import torch\nfrom diffusers import StableDiffusionPipeline\npipe = StableDiffusionPipeline.from_pretrained(path, torch_dtype=torch.float16)\n",
        "import torch\nmodel = build_model(torch_dtype=torch.bfloat16)\n",
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
    triggers = ("load_in_8bit", "load_in_4bit", "quantization_config")
    valid = (
        "from transformers import AutoModelForCausalLM, Trainer\nfrom peft import get_peft_model, LoraConfig\n"
        "model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)\n"
        "model = get_peft_model(model, LoraConfig(r=8))\ntrainer = Trainer(model=model, args=args)\n",
        "from transformers import AutoModelForCausalLM\nmodel = AutoModelForCausalLM.from_pretrained(name, load_in_4bit=True)\n"
        "out = model.generate(**inputs)\n",
        "from transformers import AutoModelForCausalLM\nimport torch\nmodel = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=False)\n"
        "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)\n",
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
            name = _assigned_name(self.ctx, call)
            if reason and name:
                quantized[name] = (call, reason)
        if not quantized:
            return
        for call in facts.calls:
            trained = self._trained_model(call)
            if trained not in quantized:
                continue
            load, reason = quantized[trained]
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

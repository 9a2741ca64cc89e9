"""DTL7xx distributed rules: every rank must hold the same dtypes, and an FSDP unit one dtype."""

from __future__ import annotations

import re

import libcst as cst

from dtype_lint.facts.amp import dtype_literal
from dtype_lint.facts.names import dotted_name
from dtype_lint.facts.training import DEFINITIONS, LOOPS, call_name, keyword, positional, receiver, walk
from dtype_lint.findings import Confidence
from dtype_lint.prefilter import exact_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.param_casting import NOT_FP32_TRIGGERS

# Conditions that differ between processes.
RANK_WORDS = re.compile(
    r"(^|_)rank(_id)?$|^get_rank$|is_main_process|is_local_main_process|is_global_zero|is_world_process_zero"
    r"|process_index|^is_master$|^is_main$"
)
CAST_METHODS = {"half": "fp16", "bfloat16": "bf16", "float": "fp32", "double": "fp64"}
LONG = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64"}
COLLECTIVES = {
    "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv", "gather", "scatter",
}
SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}


def _line(ctx, node: cst.CSTNode) -> int:
    return ctx.position(node).start.line


def cast_of(ctx, call: cst.Call) -> str | None:
    """The dtype a ``.half()`` / ``.bfloat16()`` / ``.float()`` / ``.to(<dtype>)`` call casts to."""
    name = call_name(call)
    if not isinstance(call.func, cst.Attribute):
        return None
    if name in CAST_METHODS and not call.args:
        return CAST_METHODS[name]
    if name == "to":
        for argument in (keyword(call, "dtype"), positional(call, 0), positional(call, 1)):
            literal = dtype_literal(ctx.names, argument)
            if literal is not None:
                return SHORT[literal]
    return None


def _is_rank_test(test: cst.BaseExpression) -> bool:
    for node in walk(test):
        if isinstance(node, cst.Name) and RANK_WORDS.search(node.value):
            return True
        if isinstance(node, cst.Attribute) and RANK_WORDS.search(node.attr.value):
            return True
    return False


def _statements(block) -> list[cst.CSTNode]:
    return list(block.body) if isinstance(block, cst.IndentedBlock) else [block]


class RankDependentDtype(Rule):
    """## What it does
    Flags dtype decisions that differ between processes: under a rank condition (`if rank ==
    0:`, `if accelerator.is_main_process:`, `trainer.is_global_zero`) a module cast in place
    (`model.half()`), a dtype variable set to another dtype than on the other ranks, or a tensor
    cast that then feeds a collective (`dist.all_reduce`, `broadcast`, ...).

    ## Why is this bad?
    Collectives and DDP/FSDP require every rank to send the same dtype; a mismatch hangs NCCL or
    returns garbage (pytorch/pytorch#150433, #150248), and gloo fails with "Received data size
    doesn't match expected size". A module cast on rank 0 only (say, before saving a checkpoint
    mid-training) leaves rank 0 training in another precision than the rest.

    ## Example
    ```python
    if dist.get_rank() == 0:
        model.half()
        torch.save(model.state_dict(), "ckpt.pt")
    ```

    ## Use instead
    ```python
    if dist.get_rank() == 0:
        torch.save({k: v.half() for k, v in model.state_dict().items()}, "ckpt.pt")
    ```

    ## Fix safety
    No fix: decide on rank 0 and broadcast, or cast a copy.
    """

    code = "DTL703"
    name = "rank-dependent-dtype"
    summary = "dtype chosen differently on different ranks"
    queries = (
        "the dtype flow: whether what is cast under a rank condition is a module (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "the dtype a literal names (facts/amp.py) and the file's calls (facts/training.py)",
    )
    # An ``if`` on a RANK_WORDS name, holding a dtype literal (``dtype_literal``: torch.float16/half/
    # bfloat16/float32/float/float64/double or the same as a string) or a cast (``.half()``/
    # ``.bfloat16()``/``.float()``/``.double()``, ``.to(<dtype literal>)``).
    triggers = (
        "rank", "main_process", "global_zero", "world_process_zero", "process_index",
        exact_word("is_master"), exact_word("is_main"),
    )
    required_triggers = (tuple(exact_word(w) for w in ("half", "bfloat16", "float", "double", "float16", "float32", "float64")),)
    valid = (
        "import torch\nif rank == 0:\n    dtype = torch.float16\nelse:\n    dtype = torch.float16\n",
        "import torch\nif rank == 0:\n    torch.save({k: v.half() for k, v in model.state_dict().items()}, 'ckpt.pt')\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4)\nif args.fp16:\n    model.half()\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 4)\nfor step in range(100):\n"
            "    if dist.get_rank() == 0 and step % 10 == 0:\n        model.half()\n        torch.save(model.state_dict(), 'ckpt.pt')\n"
        ),
        Invalid("import torch\nif local_rank == 0:\n    dtype = torch.bfloat16\nelse:\n    dtype = torch.float32\n"),
        Invalid(
            "import torch\nimport torch.distributed as dist\ndef sync(t, rank):\n    if rank == 0:\n        t = t.half()\n"
            "    dist.broadcast(t, src=0)\n    return t\n"
        ),
    )

    def visit_If(self, node: cst.If) -> None:
        if not _is_rank_test(node.test):
            return
        body = _statements(node.body)
        orelse = node.orelse
        other = _statements(orelse.body) if isinstance(orelse, cst.Else) else []
        self._dtype_variables(node, body, other)
        self._in_place_casts(node, body, other)
        self._collective_casts(node, body)

    def _dtype_assignments(self, statements) -> dict[str, tuple[str, cst.Assign]]:
        found: dict[str, tuple[str, cst.Assign]] = {}
        for statement in statements:
            for child in walk(statement):
                if isinstance(child, cst.Assign) and len(child.targets) == 1:
                    target = dotted_name(child.targets[0].target)
                    literal = dtype_literal(self.ctx.names, child.value)
                    if target and literal:
                        found[target] = (literal, child)
        return found

    def _dtype_variables(self, node: cst.If, body, other) -> None:
        mine = self._dtype_assignments(body)
        theirs = self._dtype_assignments(other)
        for target, (dtype, assign) in mine.items():
            if target not in theirs or theirs[target][0] == dtype:
                continue
            self.report(
                assign,
                f"`{target}` is {dtype} on the ranks where `{self.ctx.code_for(node.test)}` holds and"
                f" {theirs[target][0]} (line {_line(self.ctx, theirs[target][1])}) on the others: collectives and"
                " DDP/FSDP need one dtype on every rank; decide once and broadcast",
                confidence=Confidence.MEDIUM,
            )

    def _casts_in(self, statements) -> list[tuple[cst.Call, str, str]]:
        """In-place module casts: bare ``X.half()`` statements on something the flow calls a module."""
        found = []
        for statement in statements:
            for child in walk(statement):
                if not (isinstance(child, cst.Expr) and isinstance(child.value, cst.Call)):
                    continue
                call = child.value
                dtype = cast_of(self.ctx, call)
                owner = receiver(call)
                if dtype is None or owner is None:
                    continue
                value = self.ctx.flow.value_of(owner)
                if value is not None and value.kind == "module":
                    found.append((call, dtype, self.ctx.code_for(owner)))
        return found

    def _in_place_casts(self, node: cst.If, body, other) -> None:
        mirrored = {(target, dtype) for _, dtype, target in self._casts_in(other)}
        in_loop = self._in_loop(node)
        for call, dtype, target in self._casts_in(body):
            if (target, dtype) in mirrored or self._bound_before(target, body, call):
                continue
            self.report(
                call,
                f"`{target}` is cast to {LONG[dtype]} in place only on the ranks where"
                f" `{self.ctx.code_for(node.test)}` holds{' inside the training loop' if in_loop else ''}: the other"
                " ranks keep their dtype; cast a copy (`{k: v.half() for k, v in state_dict.items()}`) instead",
                confidence=Confidence.MEDIUM if in_loop else Confidence.LOW,
            )

    def _bound_before(self, target: str, body, call: cst.Call) -> bool:
        """``target`` is (re)bound in the rank-only block before the cast: the object cast was made
        on these ranks (``encoder = load_text_encoder(...)`` for a validation pipeline, a
        ``deepcopy``), so no other rank holds it."""
        start = self.ctx.source_order(call)[0]
        for statement in body:
            for child in walk(statement):
                if self.ctx.source_order(child)[0] >= start:
                    return False
                if isinstance(child, (cst.Assign, cst.AnnAssign)):
                    targets = [t.target for t in child.targets] if isinstance(child, cst.Assign) else [child.target]
                    if any(target == dotted_name(name) for t in targets for name in _bound_nodes(t)):
                        return True
        return False

    def _collective_casts(self, node: cst.If, body) -> None:
        casted: dict[str, cst.Call] = {}
        for statement in body:
            for child in walk(statement):
                if isinstance(child, cst.Assign) and len(child.targets) == 1 and isinstance(child.value, cst.Call):
                    target = dotted_name(child.targets[0].target)
                    if target and cast_of(self.ctx, child.value):
                        casted[target] = child.value
        if not casted:
            return
        parent = self.ctx.ancestors[-1] if self.ctx.ancestors else None
        siblings = list(getattr(parent, "body", ()))
        if node not in siblings:
            return
        for statement in siblings[siblings.index(node) + 1:]:
            for call in walk(statement):
                if not isinstance(call, cst.Call) or call_name(call) not in COLLECTIVES:
                    continue
                first = positional(call, 0)
                name = dotted_name(first) if first is not None else None
                if name in casted:
                    cast = casted[name]
                    self.report(
                        cast,
                        f"`{name}` is cast to {LONG[cast_of(self.ctx, cast)]} only where `{self.ctx.code_for(node.test)}`"
                        f" holds and then sent through `{self.ctx.code_for(call.func)}` at line {_line(self.ctx, call)}:"
                        " the ranks disagree on its dtype",
                        confidence=Confidence.MEDIUM,
                    )
                    return

    def _in_loop(self, node: cst.CSTNode) -> bool:
        # The traversal's ancestor stack: no parent map needed (it costs a whole extra pass).
        for ancestor in reversed(self.ctx.ancestors):
            if isinstance(ancestor, DEFINITIONS):
                return False
            if isinstance(ancestor, LOOPS):
                return True
        return False


def _bound_nodes(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The names and attributes an assignment target binds (``a, (b, self.c) = ...``)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [node for element in target.elements for node in _bound_nodes(element.value)]
    if isinstance(target, cst.StarredElement):
        return _bound_nodes(target.value)
    return [target]


FSDP_CLASSES = (
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
)
MODULE_ITERATORS = ("modules", "named_modules", "parameters", "named_parameters", "children", "named_children")


class FsdpNonuniformDtype(Rule):
    """## What it does
    Flags `FullyShardedDataParallel(model, ...)` (FSDP1) when, before the wrap, part of `model`
    was given another dtype than the rest: norms or heads kept in float32 on a bf16 model
    (`model.lm_head.float()`, a loop over `named_modules()` casting norm layers,
    `p.data = p.data.float()`), or PEFT adapters (float32 by default) on a bf16/fp16 base.

    ## Why is this bad?
    FSDP1 flattens the parameters of each wrapped unit into one flat tensor, which needs one
    dtype: the wrap fails with "Must flatten tensors with uniform dtype but got torch.float32
    and torch.bfloat16" (huggingface/trl#1723, huggingface/peft#484). Mixed precision belongs in
    `MixedPrecision(param_dtype=...)`, not in the stored parameters.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.bfloat16)
    model.lm_head.float()
    model = FSDP(model, device_id=rank)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float32)
    model = FSDP(model, device_id=rank, mixed_precision=MixedPrecision(param_dtype=torch.bfloat16))
    ```

    ## Fix safety
    No fix: the uniform dtype to choose is the author's call.
    """

    code = "DTL704"
    name = "fsdp-nonuniform-dtype"
    summary = "FSDP1 wrap of a module with mixed parameter dtypes"
    queries = (
        "the dtype flow: every module cast before the FSDP wrap, and the dtypes of the wrapped model's parts (facts/dtypes.py, computed by facts/flow/interpreter.py)",
        "what a dotted name really refers to through the file's imports and aliases (facts/names.py)",
    )
    # An FSDP1 class (imported under its own name), and two float dtypes in the wrapped model (a
    # float16/bfloat16 base with PEFT adapters, or a cast part), so one that is not float32.
    triggers = (exact_word("FullyShardedDataParallel"),)
    required_triggers = NOT_FP32_TRIGGERS
    valid = (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nfrom torch import nn\n"
        "model = nn.Linear(4, 4).to(torch.bfloat16)\nmodel = FSDP(model)\n",
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision\nfrom torch import nn\n"
        "model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))\n"
        "model = FSDP(model, mixed_precision=MixedPrecision(param_dtype=torch.bfloat16))\n",
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nfrom torch import nn\n"
        "model = nn.Linear(4, 4).to(torch.bfloat16)\nmodel.float()\nmodel = FSDP(model)\n",
    )
    invalid = (
        Invalid(
            "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nfrom transformers import AutoModelForCausalLM\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2', dtype=torch.bfloat16)\nmodel.lm_head.float()\nmodel = FSDP(model)\n"
        ),
        Invalid(
            "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel\nfrom torch import nn\n"
            "net = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4)).to(torch.bfloat16)\n"
            "for name, p in net.named_parameters():\n    if 'norm' in name or p.ndim == 1:\n        p.data = p.data.float()\n"
            "net = FullyShardedDataParallel(net, device_id=0)\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.ctx.names.matches(node.func, *FSDP_CLASSES):
            return
        wrapped = keyword(node, "module")
        if wrapped is None:
            wrapped = positional(node, 0)
        name = dotted_name(wrapped) if wrapped is not None else None
        value = self.ctx.flow.value_of(wrapped) if wrapped is not None else None
        if name is None or value is None or value.kind != "module" or not value.certain:
            return
        whole = value.dtype
        found = self._other_dtype(node, name, whole, value)
        if found is None:
            return
        where, other = found
        is_are = "are" if where.endswith("adapters") else "is"
        policy = keyword(node, "auto_wrap_policy") is not None
        self.report(
            node,
            f"`{name}` is {value.describe()} {value.since(whole)} but {where} {is_are} {LONG.get(other, other)}: FSDP1 flattens"
            " each unit into one tensor and needs one dtype (\"Must flatten tensors with uniform dtype\"); keep the"
            " parameters uniform and use `MixedPrecision`",
            confidence=Confidence.LOW if policy else Confidence.MEDIUM,
        )

    def _other_dtype(self, wrap: cst.Call, name: str, whole: str, value) -> tuple[str, str] | None:
        wrap_line = _line(self.ctx, wrap)
        function = self.ctx.enclosing(wrap, cst.FunctionDef)
        if value.role == "peft" and whole in ("fp16", "bf16"):
            return "its PEFT adapters", "fp32"
        for cast in self.ctx.flow.module_casts:
            if not cast.in_place or cast.function is not function or _line(self.ctx, cast.node) >= wrap_line:
                continue
            other = next(iter(cast.dtypes)) if len(cast.dtypes) == 1 else None
            if other is None or other == whole:
                continue
            if cast.target.startswith(name + "."):
                return f"`{cast.target}` (line {_line(self.ctx, cast.node)})", other
            loop = self._module_loop(cast.node, name)
            if loop is not None:
                return f"part of it (cast in the loop at line {_line(self.ctx, loop)})", other
        for assign in walk(function if function is not None else self.ctx.module):
            if not isinstance(assign, cst.Assign) or _line(self.ctx, assign) >= wrap_line:
                continue
            target = assign.targets[0].target if len(assign.targets) == 1 else None
            if not (isinstance(target, cst.Attribute) and target.attr.value == "data" and isinstance(assign.value, cst.Call)):
                continue
            other = cast_of(self.ctx, assign.value)
            if other is None or other == whole:
                continue
            loop = self._module_loop(assign, name)
            if loop is not None:
                return f"part of it (`{self.ctx.code_for(target)}` cast at line {_line(self.ctx, assign)})", other
        return None

    def _module_loop(self, node: cst.CSTNode, name: str) -> cst.For | None:
        """The ``for ... in <name>.named_parameters()`` (or modules...) loop around ``node``."""
        current = self.ctx.parent(node)
        while current is not None and not isinstance(current, DEFINITIONS):
            if isinstance(current, cst.For) and isinstance(current.iter, cst.Call):
                owner = receiver(current.iter)
                if call_name(current.iter) in MODULE_ITERATORS and owner is not None and dotted_name(owner) == name:
                    return current
            current = self.ctx.parent(current)
        return None

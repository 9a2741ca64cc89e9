"""Framework precision sources: where a program's precision is decided without a cast in sight.

``TrainingArguments(fp16=True)``, ``Accelerator(mixed_precision="bf16")``, Lightning's
``Trainer(precision="16-mixed")``, a DeepSpeed config dict, an argparse ``--fp16`` flag: each
decides the parameter dtype, whether (and in which dtype) autocast runs the forward pass, and
whether the framework makes its own GradScaler. The catalog below holds them AS DATA: to teach
dtype-lint a new framework, add a ``Source`` (the callables and the argument to read) and its
``Effect`` per argument value, and a test in tests/test_precision_sources.py.

``sources_in(module, names)`` finds every source of a file, in source order. The analysis
never imports the frameworks: callables are matched by qualified name through the file's imports.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from . import config_values
from .amp import literal_bool, literal_string
from .names import ImportTable, dotted_name
from .training import keyword, walk
from .flow.values import BF16, FP16

NUMBER = "number"  # the argument value was an int literal (Lightning's ``precision=16``)


@dataclasses.dataclass(frozen=True)
class Effect:
    """What a precision source implies for the code it drives.

    ``params``: the dtype the framework casts the parameters to (None: left float32).
    ``autocast``: the dtype of the autocast region the framework runs the forward pass in (None: none).
    ``scaler``: the framework makes and steps its own GradScaler (a hand-made one is a second).
    ``conditional``: only in one configuration of the program (a CLI flag, a ternary): medium confidence.
    """

    params: str | None = None
    autocast: str | None = None
    scaler: bool = False
    conditional: bool = False


@dataclasses.dataclass(frozen=True)
class Source:
    """One catalog entry: calling one of ``callables`` with ``argument`` set to a key of ``effects``."""

    framework: str
    callables: tuple[str, ...]  # qualified names, as the file's imports resolve them
    argument: str  # the keyword argument that carries the precision
    effects: dict  # literal value (str, bool, or int as str) -> Effect


AMP_FP16 = Effect(autocast=FP16, scaler=True)
AMP_BF16 = Effect(autocast=BF16)
TRUE_FP16 = Effect(params=FP16)
TRUE_BF16 = Effect(params=BF16)
HF_ARGS = ("transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments",
           "transformers.training_args.TrainingArguments", "trl.SFTConfig")
LIGHTNING = ("lightning.Trainer", "lightning.pytorch.Trainer", "pytorch_lightning.Trainer",
             "lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric")
LIGHTNING_PRECISION = {
    "16-mixed": AMP_FP16, "16": AMP_FP16, "bf16-mixed": AMP_BF16, "bf16": AMP_BF16,
    "16-true": TRUE_FP16, "bf16-true": TRUE_BF16,
}
FROM_PRETRAINED = ("from_pretrained",)  # matched by method name: every Auto*/pipeline class has one

CATALOG: tuple[Source, ...] = (
    # Hugging Face Trainer: autocast around the forward pass; fp16 also makes a GradScaler.
    Source("transformers", HF_ARGS, "fp16", {True: AMP_FP16}),
    Source("transformers", HF_ARGS, "bf16", {True: AMP_BF16}),
    # accelerate: prepare() wraps the model's forward in autocast; fp16 makes a GradScaler.
    Source("accelerate", ("accelerate.Accelerator",), "mixed_precision", {"fp16": AMP_FP16, "bf16": AMP_BF16}),
    # Lightning: "-mixed" is autocast, "-true" casts the parameters.
    Source("lightning", LIGHTNING, "precision", LIGHTNING_PRECISION),
    # from_pretrained: ``torch_dtype=`` / ``dtype=`` cast the loaded parameters.
    Source("from_pretrained", FROM_PRETRAINED, "torch_dtype", {"float16": TRUE_FP16, "bfloat16": TRUE_BF16}),
    Source("from_pretrained", FROM_PRETRAINED, "dtype", {"float16": TRUE_FP16, "bfloat16": TRUE_BF16}),
    # ``variant="fp16"`` / ``revision="fp16"`` load half weights: the usual intent is a half model.
    Source("from_pretrained", FROM_PRETRAINED, "variant", {"fp16": Effect(params=FP16, conditional=True)}),
    Source("from_pretrained", FROM_PRETRAINED, "revision", {"fp16": Effect(params=FP16, conditional=True)}),
)

def catalog_effects(qualified: str, given: dict) -> list[tuple[Source, object, Effect]]:
    """The catalog entries a call of ``qualified`` with the literal keyword values ``given``
    matches (bools as bools, ints as their text), for readers of another tree: the project
    summary reads CPython's ``ast``."""
    found = []
    for source in CATALOG:
        if qualified in source.callables and source.argument in given:
            value = given[source.argument]
            effect = source.effects.get(value) if type(value) in (str, bool) else None
            if effect is not None:
                found.append((source, value, effect))
    return found


@dataclasses.dataclass(frozen=True)
class Runner:
    """How a framework is handed the model it runs under its sources' autocast: a constructor
    (``Trainer(model=...)``) or a method of the framework's object (``trainer.fit(model)``,
    ``accelerator.prepare(model, optimizer)``)."""

    framework: str
    callables: tuple[str, ...]  # qualified constructors given the model
    methods: tuple[str, ...]  # or methods given it
    receivers: tuple[str, ...]  # the method's receiver is named one of these (empty: any name)
    keyword: str | None  # the argument that holds the model (position 0 too); None: every positional one
    entries: tuple[str, ...]  # the model's methods the framework calls under autocast


HF_TRAINERS = ("transformers.Trainer", "transformers.Seq2SeqTrainer", "transformers.trainer.Trainer",
               "trl.SFTTrainer", "trl.DPOTrainer")
LIGHTNING_STEPS = ("training_step", "validation_step", "test_step", "predict_step", "forward")
RUNNERS: tuple[Runner, ...] = (
    Runner("transformers", HF_TRAINERS, (), (), "model", ("forward",)),
    Runner("lightning", (), ("fit", "validate", "test", "predict"), (), "model", LIGHTNING_STEPS),
    Runner("lightning", (), ("setup", "setup_module"), ("fabric",), None, ("forward",)),
    Runner("accelerate", (), ("prepare", "prepare_model"), ("accelerator",), None, ("forward",)),
)


# argparse flags that switch a program to low precision; the flag may be off: conditional.
FLAG_EFFECTS = {
    "--fp16": Effect(params=FP16, conditional=True), "--half": Effect(params=FP16, conditional=True),
    "--bf16": Effect(params=BF16, conditional=True),
    "--amp": Effect(autocast=FP16, scaler=True, conditional=True),
    "--mixed_precision": Effect(autocast=FP16, conditional=True),
    "--mixed-precision": Effect(autocast=FP16, conditional=True),
}
ADD_ARGUMENT = "add_argument"
# transformers/trl parsers of TrainingArguments from the command line or a config file.
ARGUMENT_PARSERS = frozenset({"HfArgumentParser", "TrlParser"})
CLI_PARSES = frozenset({"parse_args_into_dataclasses", "parse_args_and_config", "parse_yaml_file", "parse_json_file"})
# DeepSpeed config dicts: ``{"fp16": {"enabled": True}}`` trains fp16 parameters with its own scaler
# (``"bfloat16"`` is DeepSpeed's alias of ``"bf16"``; ``"enabled": "auto"`` is left to another config).
DEEPSPEED_KEYS = {"fp16": Effect(params=FP16, scaler=True), "bf16": Effect(params=BF16),
                  "bfloat16": Effect(params=BF16)}
# Dtype names as idioms spell them (diffusers' ``weight_dtype``, nanoGPT's ``dtype`` string).
DTYPE_SPELLINGS = {"float16": FP16, "half": FP16, "bfloat16": BF16}


@dataclasses.dataclass(frozen=True)
class Handoff:
    """A call that hands a module class's instance to a framework which casts its parameters: the
    class then runs in a precision world (``dtype_lint/project/``).

    ``callables``: qualified names of the call (``deepspeed.initialize``), or, with ``made_by``, the
    method names of an object a catalog ``Source`` of that framework made (``trainer.fit(model)``
    of ``Trainer(precision="16-true")``). ``model``: the keyword and position of the module.
    ``config``: keywords carrying a DeepSpeed config (a dict, a module constant, a JSON file path).
    ``dtype``: a keyword carrying a torch dtype. ``trains``: the optimizer steps those low-precision
    parameters themselves, with no float32 master copy (optimizer rules such as DTL404 then apply
    inside the class, not only its numerics).
    """

    framework: str
    callables: tuple[str, ...]
    model: str
    position: int
    trains: bool
    made_by: str | None = None
    config: tuple[str, ...] = ()
    dtype: tuple[str, ...] = ()


HANDOFFS: tuple[Handoff, ...] = (
    # deepspeed.initialize(args=None, model=None, ..., config=None, config_params=None): the engine
    # casts the module to the config's fp16/bf16 and runs it there; its fp16/bf16 optimizers and
    # ZeRO step float32 master weights, so the client optimizer's eps is not the parameters'.
    Handoff("deepspeed", ("deepspeed.initialize",), "model", 1, trains=False, config=("config", "config_params")),
    # deepspeed.init_inference(model, dtype=torch.half): inference in that dtype.
    Handoff("deepspeed", ("deepspeed.init_inference",), "model", 0, trains=False, dtype=("dtype",)),
    # Lightning "-true" precisions cast the LightningModule and step its half parameters (no master
    # copy); fit trains it, the others run it.
    Handoff("lightning", ("fit",), "model", 0, trains=True, made_by="lightning"),
    Handoff("lightning", ("validate", "test", "predict"), "model", 0, trains=False, made_by="lightning"),
    Handoff("lightning", ("setup", "setup_module"), "module", 0, trains=True, made_by="lightning"),
)


@dataclasses.dataclass(frozen=True)
class Callback:
    """A method of a low-precision library model that calls the objects it is given with tensors
    in the model's dtype: ``model.generate(logits_processor=[proc])`` calls ``proc(input_ids,
    scores)`` with the model's float16 logits (transformers before 4.45 and remote-code models;
    later releases hand float32 scores: a reachable configuration, medium)."""

    method: str
    keywords: tuple[str, ...]
    calls: tuple[str, ...]  # the methods of the given objects that run with those tensors


CALLBACKS: tuple[Callback, ...] = (
    Callback("generate", ("logits_processor", "stopping_criteria"), ("__call__",)),
)


def deepspeed_setting(config) -> str | None:
    """The low key of a DeepSpeed config (a plain dict, from source or a JSON file) whose
    ``enabled`` is True: ``"fp16"`` for ``{"fp16": {"enabled": True}}``, else None."""
    if not isinstance(config, dict):
        return None
    for key in DEEPSPEED_KEYS:
        section = config.get(key)
        if isinstance(section, dict) and section.get("enabled") is True:
            return key
    return None


def lightning_params(value) -> str | None:
    """The parameter dtype a Lightning ``precision=`` value casts to (``"16-true"`` -> fp16)."""
    effect = LIGHTNING_PRECISION.get(str(value)) if value is not None else None
    return effect.params if effect is not None else None


def from_pretrained_params(argument: str, value: str | None) -> tuple[str, bool] | None:
    """(parameter dtype, only in some configurations) that ``from_pretrained(<argument>=<value>)``
    loads: ``torch_dtype`` ``"float16"`` -> (fp16, False), ``variant`` ``"fp16"`` -> (fp16, True)."""
    for source in CATALOG:
        if source.framework == "from_pretrained" and source.argument == argument:
            effect = source.effects.get(value)
            if effect is not None and effect.params:
                return effect.params, effect.conditional
    return None


@dataclasses.dataclass(frozen=True)
class Found:
    """A precision source found in a file."""

    framework: str
    node: cst.CSTNode
    effect: Effect
    description: str  # ``Accelerator(mixed_precision="fp16")`` in words, for messages
    setting: cst.CSTNode | None = None  # the argument's value when chosen at run time (where a fix goes)
    value: cst.CSTNode | None = None  # the argument's value as written (``True`` of ``fp16=True``)


def _literal(node: cst.BaseExpression):
    """A literal string / bool / int (as str) argument value, else None."""
    text = literal_string(node)
    if text is not None:
        return text
    flag = literal_bool(node)
    if flag is not None:
        return flag
    if isinstance(node, cst.Integer):
        return node.value
    return None


def _dtype_spelling(node: cst.BaseExpression) -> str | None:
    """``torch.float16`` / ``torch.half`` / ``"bfloat16"`` -> fp16 / bf16."""
    if isinstance(node, cst.Attribute):
        return DTYPE_SPELLINGS.get(node.attr.value)
    text = literal_string(node)
    return DTYPE_SPELLINGS.get(text) if text is not None else None


def _flag_choices(nodes: list[cst.CSTNode]) -> dict[str, tuple]:
    """The literal values a run-time setting may take: by flag name (``mixed_precision``), its
    argparse ``choices=`` and ``default=`` (``add_argument("--mixed_precision", choices=["no",
    "fp16", "bf16"])``); by dotted name (``args.mixed_precision``), the literals it is compared with."""
    table: dict[str, tuple] = {}
    for node in nodes:
        if type(node) is cst.Comparison:
            # ``args.mixed_precision == "fp16"``: the program expects that value (the parser may be
            # in another file).
            left = dotted_name(node.left)
            if left is not None:
                compared = tuple(_literal(t.comparator) for t in node.comparisons
                                 if isinstance(t.operator, (cst.Equal, cst.NotEqual)))
                table[left] = table.get(left, ()) + tuple(v for v in compared if v is not None)
            continue
        if type(node) is not cst.Call or not (isinstance(node.func, cst.Attribute) and node.func.attr.value == ADD_ARGUMENT):
            continue
        flag = next((literal_string(a.value) for a in node.args if a.keyword is None
                     and (literal_string(a.value) or "").startswith("--")), None)
        if flag is None:
            continue
        values: list = []
        choices = keyword(node, "choices")
        if isinstance(choices, (cst.List, cst.Tuple, cst.Set)):
            values.extend(_literal(e.value) for e in choices.elements)
        default = keyword(node, "default")
        if default is not None:
            values.append(_literal(default))
        dest = flag[2:].replace("-", "_")
        table[dest] = table.get(dest, ()) + tuple(v for v in values if v is not None)
    return table


def _value_choices(value_node: cst.BaseExpression, flags: dict[str, tuple], settings=None) -> tuple[tuple, bool]:
    """The literal values an argument may take, and whether it is one of several (conditional):
    a literal; a ternary of literals; an argparse flag's choices and default (``args.precision``);
    the values config files give the setting it reads (``settings``: expression -> values)."""
    value = _literal(value_node)
    if value is not None:
        return (value,), False
    configured = tuple(settings(value_node)) if settings is not None else ()
    if configured:
        return configured, True
    if isinstance(value_node, cst.IfExp):
        branches = (_literal(value_node.body), _literal(value_node.orelse))
        return tuple(b for b in branches if b is not None), True
    if isinstance(value_node, cst.Attribute):
        name = dotted_name(value_node)
        return flags.get(value_node.attr.value, ()) + flags.get(name, ()), True
    if isinstance(value_node, cst.Name):
        return flags.get(value_node.value, ()), True
    return (), False


def _catalog_matches(names: ImportTable, call: cst.Call, flags: dict[str, tuple], settings=None):
    method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
    for source in CATALOG:
        if not (names.matches(call.func, *source.callables) or (method is not None and method in source.callables)):
            continue
        value_node = keyword(call, source.argument)
        if value_node is None:
            continue
        if source.argument not in ("torch_dtype", "dtype"):
            values, chosen = _value_choices(value_node, flags, settings)
            if chosen:  # several values: each one a reachable configuration
                seen = set()
                for value in values:
                    effect = source.effects.get(value)
                    if effect is not None and effect not in seen:
                        seen.add(effect)
                        shown = f'"{value}"' if isinstance(value, str) else value
                        description = f"`{source.argument}={cst.Module([]).code_for_node(value_node)}` ({shown} on some runs)"
                        yield Found(source.framework, call, dataclasses.replace(effect, conditional=True), description,
                                    value_node)
                continue
        value = _literal(value_node)
        if source.argument in ("torch_dtype", "dtype"):
            value = {FP16: "float16", BF16: "bfloat16"}.get(_dtype_spelling(value_node))
        effect = source.effects.get(value)
        if effect is not None:
            shown = f'"{value}"' if isinstance(value, str) and not isinstance(value_node, cst.Integer) else value
            if source.argument in ("torch_dtype", "dtype"):
                shown = f"torch.{value}"
            yield Found(source.framework, call, effect, f"`{source.argument}={shown}`", value=value_node)


def _parsed_training_arguments(call: cst.Call, parsers: dict[str, cst.Call]) -> list[Found]:
    """``parser.parse_args_into_dataclasses()`` of an ``HfArgumentParser`` over a
    ``*TrainingArguments``/``*Config`` class: ``--fp16`` and ``--bf16`` come from the command line,
    each a reachable configuration."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value in CLI_PARSES):
        return []
    parser = parsers.get(dotted_name(call.func.value) or "")
    if parser is None:
        return []
    classes = [dotted_name(n) or "" for n in walk(parser) if isinstance(n, (cst.Name, cst.Attribute))]
    if not any(c.endswith("TrainingArguments") or c.endswith("SFTConfig") for c in classes):
        return []
    return [Found("transformers", call, dataclasses.replace(AMP_FP16, conditional=True), "`--fp16` on the command line"),
            Found("transformers", call, dataclasses.replace(AMP_BF16, conditional=True), "`--bf16` on the command line")]


def _flag(call: cst.Call) -> Found | None:
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == ADD_ARGUMENT):
        return None
    for arg in call.args:
        if arg.keyword is None and literal_string(arg.value) in FLAG_EFFECTS:
            flag = literal_string(arg.value)
            return Found("argparse", call, FLAG_EFFECTS[flag], f"`{flag}`")
    return None


def _deepspeed(node: cst.Dict) -> Found | None:
    """``{"fp16": {"enabled": True}}`` (a nested dict whose ``enabled`` is True)."""
    for element in node.elements:
        if not isinstance(element, cst.DictElement) or not isinstance(element.value, cst.Dict):
            continue
        key = literal_string(element.key)
        if key not in DEEPSPEED_KEYS:
            continue
        for inner in element.value.elements:
            if isinstance(inner, cst.DictElement) and literal_string(inner.key) == "enabled" \
                    and literal_bool(inner.value) is True:
                return Found("deepspeed", node, DEEPSPEED_KEYS[key], f'`{{"{key}": {{"enabled": True}}}}`')
    return None


def _dtype_choice(node: cst.IfExp) -> Found | None:
    """``torch.float16 if args.mixed_precision == "fp16" else torch.float32`` (diffusers) and
    ``'bfloat16' if torch.cuda.is_bf16_supported() else 'float16'`` (nanoGPT): one branch is low."""
    chosen = [_dtype_spelling(node.body), _dtype_spelling(node.orelse)]
    low = [dtype for dtype in chosen if dtype is not None]
    if not low:
        return None
    both_low = len(low) == 2
    return Found("dtype-choice", node, Effect(params=low[0], conditional=not both_low),
                 "a dtype chosen by a condition")


_LAST: list = [None, []]  # (tree, its sources): files are checked one at a time per process


def sources_in(module: cst.Module, names: ImportTable | None = None, ctx=None) -> list[Found]:
    """Every precision source of ``module``, in source order (one walk of the fields, no visitor;
    remembered for the last tree, as several rules and the flow ask). ``ctx``: the file's
    context, whose config settings (facts/config_values.py) a source's argument may read."""
    if _LAST[0] is not module:
        settings = None
        if ctx is not None and config_values.table(ctx):
            def settings(node):
                return [s.value for s in config_values.settings_of(ctx, node)]
        _LAST[:] = [module, _find(module, names if names is not None else ImportTable.from_module(module), settings)]
    return _LAST[1]


def _find(module: cst.Module, names: ImportTable, settings=None) -> list[Found]:
    # One walk collects the candidates; the run-time settings (argparse flags, compared literals)
    # must all be known before the calls that read them are matched, wherever they are defined.
    candidates: list[cst.CSTNode] = []
    for node in walk(module, into_definitions=True):
        kind = type(node)
        if kind is cst.Call or kind is cst.Dict or kind is cst.IfExp or kind is cst.Comparison or kind is cst.Assign:
            candidates.append(node)
    flags = _flag_choices(candidates)
    parsers: dict[str, cst.Call] = {}
    found: list[Found] = []
    for node in candidates:
        kind = type(node)
        if kind is cst.Assign:
            if isinstance(node.value, cst.Call) and len(node.targets) == 1 \
                    and (dotted_name(node.value.func) or "").rsplit(".", 1)[-1] in ARGUMENT_PARSERS:
                parsers[dotted_name(node.targets[0].target) or ""] = node.value
        elif kind is cst.Call:
            found.extend(_catalog_matches(names, node, flags, settings))
            found.extend(_parsed_training_arguments(node, parsers))
            flag = _flag(node)
            if flag is not None:
                found.append(flag)
        elif kind is cst.Dict or kind is cst.IfExp:
            match = _deepspeed(node) if kind is cst.Dict else _dtype_choice(node)
            if match is not None:
                found.append(match)
    return found


def autocast_wrapping(found: list[Found], framework: str) -> str | None:
    """The autocast dtype a framework's sources wrap forward passes in (None: none or mixed)."""
    dtypes = {f.effect.autocast for f in found if f.framework == framework and f.effect.autocast
              and not f.effect.conditional}
    return next(iter(dtypes)) if len(dtypes) == 1 else None

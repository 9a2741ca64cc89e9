#!/usr/bin/env python3
"""Ask the installed torch what its API does to dtypes; write it as data for the analyzer.

    pip install expecttest                    # torch.testing._internal imports it
    python tools/gen_torch_semantics.py       # -> dtype_lint/data/torch_semantics_<major>.<minor>.json
    python tools/gen_torch_semantics.py --only torch.exp,Tensor.sum,torch.nn.Linear --print

Run by developers when torch changes, never at check time: the analyzer reads the JSON file
(dtype_lint/facts/semantics.py) and never imports torch. Regenerating under another torch writes
that version's file beside the others; ``target-torch`` picks one (docs/torch-semantics.md).

Where each fact comes from (an entry's ``src``):

* ``op_db``: torch's own op database (``torch.testing._internal.common_methods_invocations``).
  Its sample inputs are run on CPU, cast to each dtype: the output dtype per input dtype, the
  output under mixed float16/float32 operands (promoted, the first operand's, or the error torch
  raises), whether ``dtype=`` sets the output, and which dtypes have no kernel: on CPU when the
  OpInfo does not claim the dtype *and* the run raises; on CUDA when the OpInfo does not claim it
  (torch's CI checks those claims on CUDA: ``test_ops.py::test_dtypes``).
* ``module_db``: torch's module database (``common_modules``) for ``torch.nn`` classes, the
  other ``torch.nn`` classes built with small argument lists; a module's entry records the torch
  functions its ``forward`` calls (``calls``), from which CUDA kernels and autocast follow.
* ``probe``: the rest of the public functions and Tensor methods whose stubs say they return a
  tensor, called with small CPU tensors (``f(x)``, ``f(x, x)``, ``x.m(0)``...) and factories
  called with Python numbers (``torch.zeros(2, 3)``; under ``set_default_dtype(float64)`` too,
  to tell "the default dtype" from "float32").
* autocast (``amp``): on CPU by running under ``torch.autocast("cpu", dtype=torch.bfloat16)``;
  on CUDA by running the same sample under CUDA autocast on fake CUDA tensors
  (``FakeTensorMode``: the dispatcher's AutocastCUDA kernels and the meta kernels decide the
  output dtype, no GPU needed); where that cannot run, from torch's CUDA autocast test lists
  (``autocast_test_lists.AutocastTestLists``) and the op lists of
  https://pytorch.org/docs/stable/amp.html (below), matched by op name. The same fake CUDA run
  gives the output dtype of a float16 op that has no CPU kernel (``rfft2``: complex32).
* CUDA kernels: op_db's claims as for an Ampere-or-later GPU (op_db reads some claims from the
  GPU it finds at import: ``bfloat16 if SM53OrLater``); a module's from the functions its
  ``forward`` calls. Device moves (``x.cuda()``) cannot run without the device: ``src: docs``.
* operands (``opnd``, ``opkw``): which arguments take part in the result's dtype, from torch's
  ``.pyi`` stubs (parameters typed ``Tensor`` or ``Number``).
* range (``range``): float16/bfloat16 runs of the same samples scaled to |x| <= 8 and <= 64, and
  of a 4096-element input for reductions, against float32 on the same (rounded) values:
  ``overflow`` (inf where float32 is finite) or ``precision`` (relative error above 1 % for
  float16, 5 % for bfloat16).
* devices (``devices``): dtypes no op of op_db claims on a device (MPS: float64), so the device
  has no tensor of that dtype at all.
* every other public name under ``torch`` (submodules included) is catalogued by kind: a
  namespace, a dtype, a class, a function that returns no tensor (from its annotations and
  torch's ``.pyi`` stubs), or a value.

The output is deterministic for one torch build (seeded samples, sorted keys).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import inspect
import json
import logging
import math
import os
import re
import signal
import sys
import types
import warnings
from collections import defaultdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "dtype_lint" / "data"

# The analyzer's dtype names (dtype_lint/facts/flow/values.py) and the torch dtype each is probed as.
CODES = {
    "fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
    "fp64": torch.float64, "int": torch.int64, "bool": torch.bool,
}
FLOAT_CODES = ("fp32", "fp16", "bf16", "fp64")
LOW = ("fp16", "bf16")
_BY_DTYPE = {dtype: code for code, dtype in CODES.items()}

# Submodules ``import torch`` does not import but code commonly reaches.
EXTRA_MODULES = (
    "torch.utils.data", "torch.utils.checkpoint", "torch.nn.parallel", "torch.optim.lr_scheduler",
    "torch.distributions", "torch.profiler", "torch.onnx", "torch.multiprocessing", "torch.distributed.fsdp",
    "torch.distributed.algorithms.join", "torch.distributed.device_mesh", "torch.nn.utils.rnn",
    "torch.nn.utils.parametrizations", "torch.amp", "torch.cuda.amp", "torch.cpu.amp", "torch.xpu", "torch.mps",
    "torch.accelerator", "torch.export", "torch.func", "torch.hub", "torch.random", "torch.testing",
    "torch.autograd.profiler", "torch.jit", "torch.fx", "torch.compiler", "torch.nn.attention",
    "torch.distributed.checkpoint", "torch.distributed.tensor", "torch.distributed.nn", "torch.distributed.optim",
    "torch.utils.hooks", "torch.overrides", "torch.library", "torch.nn.init", "torch.nn.utils",
    "torch.distributed.elastic.multiprocessing.errors", "torch.cuda.nvtx", "torch.onnx.symbolic_helper",
    "torch.onnx.symbolic_opset9", "torch.onnx.utils", "torch.onnx.operators", "torch.utils.data.dataloader",
)

# The op lists of https://pytorch.org/docs/stable/amp.html ("CUDA Op-Specific Behavior"), by the
# names the page uses; united with torch's own CUDA test lists, which use aten names.
DOCS_CUDA_LOWER = """__matmul__ addbmm addmm addmv addr baddbmm bmm chain_matmul multi_dot conv1d conv2d conv3d
    conv_transpose1d conv_transpose2d conv_transpose3d GRUCell linear LSTMCell matmul mm mv prelu RNNCell""".split()
DOCS_CUDA_FP32 = """__pow__ __rdiv__ __rpow__ __rtruediv__ acos asin binary_cross_entropy_with_logits cosh
    cosine_embedding_loss cdist cosine_similarity cross_entropy cumprod cumsum dist erfinv exp expm1 group_norm
    hinge_embedding_loss kl_div l1_loss layer_norm log log_softmax log10 log1p log2 margin_ranking_loss mse_loss
    multilabel_margin_loss multi_margin_loss nll_loss norm normalize pdist poisson_nll_loss pow prod reciprocal
    rsqrt sinh smooth_l1_loss soft_margin_loss softmax softmin softplus sum renorm tan triplet_margin_loss""".split()
DOCS_CUDA_PROMOTE = "addcdiv addcmul atan2 bilinear cross dot grid_sample index_put scatter_add tensordot".split()
# aten spellings in torch's test lists whose public name differs
ATEN_PUBLIC = {"grid_sampler": "grid_sample", "linalg_multi_dot": "multi_dot", "linalg_vecdot": "vecdot",
               "lstm_cell": "LSTMCell", "gru_cell": "GRUCell", "rnn_tanh_cell": "RNNCell", "rnn_relu_cell": "RNNCell",
               "__matmul__": "matmul", "__pow__": "pow", "__rpow__": "pow"}

# Results that are random or uninitialised: no numerics probe on them.
_RANDOM = ("rand", "normal", "bernoulli", "dropout", "multinomial", "uniform", "cauchy", "exponential",
           "geometric", "log_normal", "poisson", "empty", "new_empty", "randint", "randperm", "sample")
# Never called by the generic probes (side effects beyond the tensors they are given).
_NEVER_CALL = frozenset({
    "from_file", "set_default_dtype", "set_default_tensor_type", "set_default_device", "set_rng_state",
    "manual_seed", "seed", "set_num_threads", "set_num_interop_threads", "save", "load", "set_printoptions",
    "use_deterministic_algorithms", "set_flush_denormal", "set_warn_always", "set_anomaly_enabled",
    "share_memory_", "pin_memory", "backward", "set_",
    "resize_", "resize_as_", "record_stream", "cuda", "xpu", "mps", "ipu", "hpu", "mtia", "to_mkldnn",
})
# An error that says the dtype has no kernel (the generic probes have no database claim to check).
KERNEL_ERROR = re.compile(r"not implemented for|[Uu]nsupported dtype|does(n't| not) support|not supported|"
                          r"must be either float or double|[Ll]ow precision")
RANGE_SCALES = (1.0, 2.0, 8.0, 16.0, 64.0, 256.0)
RANGE_TOLERANCE = {"fp16": 1e-2, "bf16": 5e-2}
# Tensor methods that move memory and cannot run without the device (``x.cuda()`` here raises
# "not compiled with CUDA", and fake tensors refuse it too): their docs ("a copy of this object
# in CUDA memory") keep the dtype; recorded as ``same`` with ``src: docs``.
DEVICE_MOVES = ("cuda", "xpu", "mps", "ipu", "hpu", "mtia", "pin_memory", "share_memory_")
FP16_MAX = 65504.0
CALL_SECONDS = 5.0


# -- small helpers ------------------------------------------------------------------------------
def code(dtype: torch.dtype) -> str:
    """The data's name for a dtype: the analyzer's for its six, torch's otherwise (``int32``)."""
    return _BY_DTYPE.get(dtype) or str(dtype).replace("torch.", "")


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float):
    def fire(signum, frame):
        raise _Timeout(f"took over {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            found = first_tensor(item)
            if found is not None:
                return found
    return None


def tensor_outputs(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    found = first_tensor(value)
    return [found] if found is not None else []


def message_of(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:240]


def call(fn, args, kwargs):
    """(result, None) or (None, error message); warnings silenced, a time limit kept."""
    try:
        with warnings.catch_warnings(), _time_limit(CALL_SECONDS):
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs), None
    except _Timeout as error:
        return None, f"timeout: {error}"
    except BaseException as error:  # torch raises many types; SystemExit would be a generator bug
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return None, message_of(error)


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype):
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def map_tensors(value, fn):
    """``value`` with every tensor in it (lists, tuples, dicts) replaced by ``fn(tensor)``."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(map_tensors(v, fn) for v in value)
    if isinstance(value, list):
        return [map_tensors(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    return value


def tensors_in(value) -> list:
    found = []
    map_tensors(value, lambda t: found.append(t) or t)
    return found


# -- rules from observations ----------------------------------------------------------------------
def classify(outputs: dict[str, str], int_default: str | None = None) -> str | dict | None:
    """The output rule from {input code: output code} over the dtypes that ran.

    ``same``: the input's dtype. ``float``: floats keep theirs, integers and bool give the
    default float dtype. ``widen``: floats keep theirs, integers and bool give int64 (``sum``).
    ``=X``: always X. Else the map itself. None: too few runs to tell.
    """
    if not outputs:
        return None
    if len(outputs) == 1:
        (given, out), = outputs.items()
        # one dtype runs at all: "same" and "=X" say the same for it
        return "same" if out == given else f"={out}"
    if all(out == given for given, out in outputs.items()):
        return "same"
    values = set(outputs.values())
    if len(values) == 1:
        return f"={values.pop()}"
    floats_keep = all(outputs[d] == d for d in FLOAT_CODES if d in outputs)
    integral = {outputs[d] for d in ("int", "bool") if d in outputs}
    if floats_keep and integral == {"fp32"} and int_default == "fp64":
        return "float"
    if floats_keep and integral == {"int"}:
        return "widen"
    return dict(sorted(outputs.items()))


# -- stubs: what a function returns, from torch's .pyi files and annotations ----------------------
def stub_returns() -> dict[str, set[str]]:
    """Function and method name -> the return annotations its stubs give (all overloads)."""
    base = Path(torch.__file__).parent
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(base.rglob("*.pyi")):
        try:
            tree = ast.parse(path.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
                found[node.name].add(ast.unparse(node.returns))
    return found


def stub_params() -> dict[str, set[str]]:
    """Function and method name -> its parameter names in any stub overload."""
    base = Path(torch.__file__).parent
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(base.rglob("*.pyi")):
        try:
            tree = ast.parse(path.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                found[node.name].update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
    return found


def stub_signatures() -> dict[tuple[str, str], list[list[tuple[str, str, bool]]]]:
    """(scope, name) -> overloads, each [(parameter, annotation, positional)]: ``torch`` for
    ``_VariableFunctions.pyi``, ``Tensor`` for ``TensorBase`` (``self`` dropped), ``_nn`` and
    ``F`` for the functional stubs."""
    base = Path(torch.__file__).parent
    found: dict[tuple[str, str], list] = defaultdict(list)

    def add(scope, node, drop_self=False):
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        if drop_self and positional and positional[0].arg == "self":
            positional = positional[1:]
        params = [(a.arg, ast.unparse(a.annotation) if a.annotation else "", True) for a in positional]
        params += [(a.arg, ast.unparse(a.annotation) if a.annotation else "", False) for a in args.kwonlyargs]
        found[(scope, node.name)].append(params)

    for scope, relative in (("torch", "_C/_VariableFunctions.pyi"), ("_nn", "_C/_nn.pyi"), ("F", "nn/functional.pyi")):
        tree = ast.parse((base / relative).read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                add(scope, node)
    tree = ast.parse((base / "_C/__init__.pyi").read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TensorBase":
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    add("Tensor", item, drop_self=True)
    return found


def _is_operand(parameter: str, annotation: str) -> bool:
    """A parameter whose dtype takes part in the result: torch's stubs type those ``Tensor`` or
    ``Number`` (``add``'s ``other``, ``full``'s ``fill_value``); ``_int`` dims, ``_float`` eps
    and ``out=`` do not."""
    if parameter in ("out", "dtype", "self"):
        return False
    return ("Tensor" in annotation and "TensorType" not in annotation) or "Number" in annotation


def operand_parameters(name: str, obj, signatures) -> dict:
    """``opnd``: positional indices (after a method's receiver) and ``opkw``: keyword names of
    the parameters that are operands, from the stubs or the function's own annotations."""
    overloads = []
    last = name.rsplit(".", 1)[-1]
    if name.startswith("Tensor."):
        overloads = signatures.get(("Tensor", last), [])
    elif inspect.isfunction(obj):
        try:
            signature = inspect.signature(obj)
        except (TypeError, ValueError):
            signature = None
        if signature is not None:
            params = []
            for parameter in signature.parameters.values():
                annotation = parameter.annotation
                text = annotation if isinstance(annotation, str) else (
                    "" if annotation is inspect.Parameter.empty else repr(annotation))
                positional = parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
                if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                    params.append((parameter.name, text, positional))
            overloads = [params]
    else:
        module = getattr(obj, "__module__", "") or ""
        scope = "_nn" if module == "torch._C._nn" else "torch" if module in ("torch", "torch._C._VariableFunctions") else None
        overloads = signatures.get((scope, last), []) if scope else []
        if not overloads and name.startswith("torch.nn.functional."):
            overloads = signatures.get(("F", last), [])
    if not overloads:
        return {}
    positions: set[int] = set()
    keywords: set[str] = set()
    for params in overloads:
        index = 0
        for parameter, annotation, positional in params:
            if _is_operand(parameter, annotation):
                keywords.add(parameter)
                if positional:
                    positions.add(index)
            if positional:
                index += 1
    return {"opnd": sorted(positions), "opkw": sorted(keywords)}


def return_kind(annotations: set[str]) -> str | None:
    """``tensor``, ``nontensor`` or None (unknown) from return annotation texts."""
    if not annotations:
        return None
    texts = " ".join(annotations)
    if "Tensor" in texts and "TensorType" not in texts:
        return "tensor"
    if any(word in texts for word in ("Any", "T_co", "_T", "TypeVar", "Self")):
        return None
    return "nontensor"


def annotation_kind(obj) -> str | None:
    with contextlib.suppress(Exception):
        obj = inspect.unwrap(obj)  # a decorated function's own annotations and body
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    annotation = signature.return_annotation
    if annotation is inspect.Signature.empty:
        return _returns_nothing(obj)
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None) or repr(annotation)
    return return_kind({str(text)})


def _plain_value(node: ast.AST) -> bool:
    """A returned expression that is no tensor: a constant, a comparison, ``not``, ``and``/``or``
    of those or of calls (``is_available() and ...``), ``bool(...)``/``int(...)``/``len(...)``."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Compare, ast.JoinedStr)) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    if isinstance(node, ast.BoolOp):
        return all(_plain_value(v) or isinstance(v, (ast.Call, ast.Name)) for v in node.values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "bool", "int", "str", "len", "isinstance", "hasattr", "float", "partial"):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        # ``functools.partial(...)``; ``torch._C._is_tracing()``, whose stub returns no tensor
        name = node.func.attr
        return name == "partial" or return_kind(_STUB_RETURNS.get(name, set())) == "nontensor"
    return False


_STUB_RETURNS: dict[str, set[str]] = {}  # filled by build(): stub_returns()


def _returns_nothing(obj) -> str | None:
    """``nontensor`` for a Python function whose body returns no tensor: nothing, constants,
    comparisons (``assert_close``, ``is_bf16_supported``)."""
    if not inspect.isfunction(obj):
        return None
    try:
        import textwrap

        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except (OSError, TypeError, SyntaxError):
        return None
    function = tree.body[0] if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if function is None:
        return None
    local_functions = {node.name for node in ast.walk(function)
                       if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not function}
    for node in _own_nodes(function):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return "nontensor"  # a generator, or a ``@contextmanager``'s context manager
        if isinstance(node, ast.Return) and node.value is not None and not _plain_value(node.value) and not (
                isinstance(node.value, ast.Name) and node.value.id in local_functions
                or isinstance(node.value, ast.Lambda)):
            return None  # (a decorator that returns its inner function returns no tensor)
    return "nontensor"


def _own_nodes(function):
    """The nodes of ``function``'s body, not of the functions defined in it."""
    stack = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))


# -- the catalogue of public names --------------------------------------------------------------
def catalogue() -> dict[str, object]:
    """Every public name reachable from ``torch`` through public torch submodules."""
    for name in EXTRA_MODULES:
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module(name)
    names: dict[str, object] = {}
    seen: set[int] = set()

    def walk(module) -> None:
        # names are spelled from the module's own name (``torch.nn.Linear``), not from the path
        # that reached it (``torch.ao.nn`` is another module; ``torch.autograd.torch`` is torch)
        if id(module) in seen:
            return
        seen.add(id(module))
        path = module.__name__
        # a module class's properties too (``torch.backends.cudnn.benchmark``)
        attrs = set(dir(module)) | (set(dir(type(module))) - set(dir(types.ModuleType)))
        for attr in sorted(attrs):
            if attr.startswith("_"):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    value = getattr(module, attr)
            except Exception:
                continue
            full = f"{path}.{attr}"
            if isinstance(value, types.ModuleType):
                if value.__name__.startswith("torch") and not any(p.startswith("_") for p in value.__name__.split(".")):
                    names.setdefault(full, value)
                    walk(value)
                continue
            names.setdefault(full, value)

    walk(torch)
    names["torch.__version__"] = torch.__version__
    walk(importlib.import_module("torch.__config__"))  # ``torch.__config__.show()``
    for attr in getattr(torch, "_deprecated_attrs", {}):  # ``torch.has_cuda``, through torch.__getattr__
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            names[f"torch.{attr}"] = getattr(torch, attr)
    for attr in sorted(dir(torch.Tensor)):
        if not attr.startswith("_") or attr in ("__matmul__", "__pow__", "__getitem__"):
            with contextlib.suppress(Exception):
                names[f"Tensor.{attr}"] = getattr(torch.Tensor, attr)
    return names


def is_nn_module(obj) -> bool:
    return inspect.isclass(obj) and issubclass(obj, torch.nn.Module)


def from_torch(obj) -> bool:
    """False for a class, function or module torch only re-exports (``torch.cuda.Optional``)."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__.startswith("torch")
    if inspect.isclass(obj) or inspect.isfunction(obj):
        return (getattr(obj, "__module__", None) or "torch").startswith("torch")
    return True


# -- op_db --------------------------------------------------------------------------------------
class Sample:
    """A SampleInput's call as (args, kwargs), with casting helpers."""

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, list(args), dict(kwargs)

    def run(self, **extra):
        return call(self.fn, self.args, {**self.kwargs, **extra})

    def cast(self, dtype_of):
        """A copy whose tensors of the reference dtype become ``dtype_of(index)`` (index: the
        tensor's place among them, 0 = the first operand)."""
        counter = [0]
        reference = self.reference

        def convert(t):
            if t.dtype != reference:
                return t
            index = counter[0]
            counter[0] += 1
            target = dtype_of(index)
            # a copy either way: in-place variants must not change the sample for the next run
            return t.detach().to(target).clone() if target is not None else t.detach().clone()

        return Sample(self.fn, map_tensors(self.args, convert), map_tensors(self.kwargs, convert))

    @property
    def reference(self):
        first = first_tensor(self.args)
        return first.dtype if first is not None else None

    def operands(self) -> list:
        return [t for t in tensors_in((self.args, self.kwargs)) if t.dtype == self.reference]


def samples_of(op, dtype, limit: int = 64):
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings(), _time_limit(CALL_SECONDS):
            warnings.simplefilter("ignore")
            iterator = iter(op.sample_inputs("cpu", dtype, requires_grad=False))
            for _ in range(limit):
                sample = next(iterator)
                yield Sample(op.op, [sample.input, *sample.args], sample.kwargs)
    except (StopIteration, _Timeout):
        return
    except Exception:
        return


def pick(op, dtype, want=lambda s: True, prefer=None):
    """The first sample without ``dtype=`` whose tensors are not empty (an empty input runs no
    kernel: ``svd`` of a 0x0 half matrix does not raise) and that ``want`` accepts; with
    ``prefer``, the first of the accepted ones that it also accepts, if any."""
    accepted = []
    for sample in _acceptable(op, dtype, want):
        if prefer is None or prefer(sample):
            return sample
        accepted.append(sample)
    return accepted[0] if accepted else None


def _acceptable(op, dtype, want):
    for sample in samples_of(op, dtype):
        operands = sample.operands()
        if "dtype" in sample.kwargs or any(isinstance(a, torch.dtype) for a in sample.args):
            continue  # ``x.to(torch.float64)``: the sample names its output dtype
        if not operands or any(t.numel() == 0 or t.layout != torch.strided for t in operands):
            continue
        if operands[0].dim() >= 1 and want(sample):
            yield sample


def probe_samples(sample: Sample, reference_code: str, supported_cpu: set, supported_cuda: set | None,
                  accepts_dtype: bool, name: str, mixing: Sample | None = None) -> dict:
    """One op's entry from a reference sample (all tensors of the reference dtype): its output
    rule, kernels and ranges from ``sample`` (the op's simplest form: ``histogram(x, bins=3)``),
    operand mixes and autocast from ``mixing`` when given (two tensors, matrices preferred)."""
    entry: dict = {}
    outputs: dict[str, str] = {}
    errors: dict[str, str] = {}
    tuple_outputs: dict[str, list[str]] = {}
    for dcode, dtype in CODES.items():
        cast = sample.cast(lambda index, dtype=dtype: dtype)
        result, error = cast.run()
        if error is not None:
            errors[dcode] = error
            continue
        outs = tensor_outputs(result)
        if not outs:
            continue
        outputs[dcode] = code(outs[0].dtype)
        if len(outs) > 1:
            tuple_outputs[dcode] = [code(t.dtype) for t in outs]
    cuda_outputs = {}
    for dcode in LOW:
        if dcode in errors and (supported_cuda is None or CODES[dcode] in supported_cuda):
            # no CPU kernel: the dtype CUDA gives, from its meta kernel on fake CUDA tensors
            # (``rfft2`` of float16 is complex32 there)
            found = cuda_output(sample.cast(lambda index, dtype=CODES[dcode]: dtype))
            if found is not None:
                cuda_outputs[dcode] = found
    int_default = None
    if any(outputs.get(d) == "fp32" for d in ("int", "bool")):
        with default_dtype(torch.float64):
            given = "int" if outputs.get("int") == "fp32" else "bool"
            result, error = sample.cast(lambda index: CODES[given]).run()
            if error is None and tensor_outputs(result):
                int_default = code(tensor_outputs(result)[0].dtype)
    rule = classify({**cuda_outputs, **outputs}, int_default)
    if rule is None:
        return {}
    entry["out"] = rule
    if tuple_outputs:
        per_position = list(zip(*(tuple_outputs[d] for d in sorted(tuple_outputs))))
        keys = sorted(tuple_outputs)
        entry["outs"] = [classify(dict(zip(keys, column)), int_default) for column in per_position]
    # kernels: a dtype torch's database does not claim and whose run raised here
    if supported_cpu:
        missing_cpu = sorted(d for d in errors if CODES[d] not in supported_cpu)
    else:  # no database claim to confirm: only errors that name the dtype count
        missing_cpu = sorted(d for d in errors if KERNEL_ERROR.search(errors[d]))
    entry["nok"] = {"cpu": missing_cpu}
    low_errors = {d: errors[d] for d in LOW if d in missing_cpu}
    if low_errors:
        entry["nok_err"] = low_errors.get("fp16") or low_errors.get("bf16")
    if supported_cuda is not None:
        entry["nok"]["cuda"] = sorted(d for d in CODES if CODES[d] not in supported_cuda)
    if accepts_dtype and "fp32" in outputs:
        result, error = sample.run(dtype=torch.float64)
        if error is None and tensor_outputs(result) and tensor_outputs(result)[0].dtype == torch.float64:
            entry["kw"] = "dtype"
    if any(t.layout != torch.strided for t in sample.operands()):
        return entry  # a sparse receiver (``values()``): dtypes only, no mixes, autocast or ranges
    other = mixing or sample
    mix = mixed_operands(other)
    if mix:
        entry.update(mix)
    if reference_code == "fp32" and outputs.get("fp32") in FLOAT_CODES and not str(rule).startswith("="):
        amp = {"cpu": cpu_autocast(other, mix.get("mix") if mix else None)}
        amp["cuda"], amp_error = cuda_autocast(other, mix.get("mix") if mix else None)
        amp = {device: policy for device, policy in amp.items() if policy}
        if amp:
            entry["amp"] = amp
        if amp_error:
            entry["amp_err"] = amp_error
        if not any(word in name.lower() for word in _RANDOM):
            sensitive = range_probe(sample, [d for d in LOW if d in outputs and outputs[d] == d])
            if sensitive:
                entry["range"] = sensitive
    if (reference_code == "fp32" and str(outputs.get("fp32", "")).startswith(("fp", "complex"))
            and not any(word in name.lower() for word in _RANDOM)):
        amplified = rounding_probe(sample)  # complex outputs too: ``polar(abs, angle)``
        if amplified:
            entry["rounding"] = amplified
    return entry


def guarded(probe, *args) -> dict:
    """``probe(*args)``, or no entry when the probe itself fails on an odd sample (a sparse
    tensor, a view torch refuses to cast): a missing fact, never a wrong one."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return probe(*args)
    except Exception as error:  # noqa: BLE001 - one op's odd sample must not stop the run
        print(f"skipped {args[-1]}: {message_of(error)[:120]}", file=sys.stderr)
        return {}


def mixed_operands(sample: Sample) -> dict:
    """What float16 and float32 operands together give: promote, first, or raise (+ message)."""
    operands = sample.operands()
    if len(operands) < 2 or any(t.dim() == 0 for t in operands) or not operands[0].is_floating_point():
        return {}
    others_half = sample.cast(lambda i: torch.float32 if i == 0 else torch.float16)
    first_half = sample.cast(lambda i: torch.float16 if i == 0 else torch.float32)
    result_a, error_a = others_half.run()
    result_b, error_b = first_half.run()
    return mix_entry(result_a, error_a, result_b, error_b)


def mix_entry(result_a, error_a, result_b, error_b) -> dict:
    """``mix``: ``promote`` (float32 either way), ``first`` (the first operand's dtype), ``raise``
    (both ways, ``err``: torch's message), or a map {"fp32+fp16": ..., "fp16+fp32": ...} where
    the two orders differ (``raise`` for one of them)."""
    def outcome(result, error):
        if error is not None:
            return "raise"
        outs = tensor_outputs(result)
        return code(outs[0].dtype) if outs else None

    a, b = outcome(result_a, error_a), outcome(result_b, error_b)
    if a is None or b is None:
        return {}
    found: dict = {}
    if a == b == "fp32":
        found["mix"] = "promote"
    elif a == "fp32" and b == "fp16":
        found["mix"] = "first"
    elif a == b == "raise":
        found["mix"] = "raise"
    else:
        found["mix"] = {"fp32+fp16": a, "fp16+fp32": b}
    if error_a or error_b:
        found["err"] = error_b or error_a  # the usual shape first: a half input, float32 weights
    return found


def cpu_autocast(sample: Sample, mix) -> str | None:
    """lower / fp32 / promote, by running under CPU autocast (bfloat16)."""
    def run_under(cast):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            result, error = cast.run()
        outs = tensor_outputs(result) if error is None else []
        return code(outs[0].dtype) if outs else None

    if run_under(sample) == "bf16":
        return "lower"
    if run_under(sample.cast(lambda i: torch.bfloat16)) == "fp32":
        return "fp32"
    if mix == "raise" and run_under(sample.cast(lambda i: torch.bfloat16 if i == 0 else torch.float32)) == "fp32":
        return "promote"
    return None


def _fake_cuda(sample: Sample, mode) -> Sample:
    def convert(t):
        with mode:
            return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="cuda")

    return Sample(sample.fn, map_tensors(sample.args, convert), map_tensors(sample.kwargs, convert))


def cuda_output(sample: Sample) -> str | None:
    """The output dtype of ``sample`` run on fake CUDA tensors (meta kernels), or None."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    try:
        fake = _fake_cuda(sample, mode)
        with mode:
            result, error = fake.run()
    except Exception:  # noqa: BLE001 - a meta kernel that needs the device: no fact
        return None
    outs = tensor_outputs(result) if error is None else []
    return code(outs[0].dtype) if outs else None


def cuda_autocast(sample: Sample, mix) -> tuple[str | None, str | None]:
    """lower / fp32 / promote / raise on CUDA, and the error for ``raise``: the sample run under
    CUDA autocast (float16) on fake CUDA tensors, which need no GPU (FakeTensorMode); the
    dispatcher's AutocastCUDA kernels decide the output dtypes as on a GPU."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()

    def run_under(cast, autocast=True):
        fake = _fake_cuda(cast, mode)
        torch._C.set_autocast_enabled("cuda", autocast)
        torch._C.set_autocast_dtype("cuda", torch.float16)
        try:
            with mode:
                result, error = fake.run()
        finally:
            torch._C.set_autocast_enabled("cuda", False)
            torch.clear_autocast_cache()
        outs = tensor_outputs(result) if error is None else []
        return (code(outs[0].dtype) if outs else None), error

    try:
        out, error = run_under(sample)
        if error is not None:
            plain, plain_error = run_under(sample, autocast=False)
            if plain_error is None and "autocast" in error:
                return "raise", error  # ``binary_cross_entropy``: banned under autocast
            return None, None
        if out == "fp16":
            return "lower", None
        if run_under(sample.cast(lambda i: torch.float16))[0] == "fp32":
            return "fp32", None
        if mix == "raise":
            mixed, _ = run_under(sample.cast(lambda i: torch.float16 if i == 0 else torch.float32))
            if mixed == "fp32":
                return "promote", None
    except Exception:  # noqa: BLE001 - a meta kernel that needs a real device: no fact
        return None, None
    return None, None


def _scaled(sample: Sample, scale: float) -> Sample:
    floats = [t for t in sample.operands() if t.is_floating_point()]
    peak = max((float(t.abs().max()) for t in floats if t.numel()), default=0.0)
    if not peak or not math.isfinite(peak):
        return None
    factor, reference = scale / peak, sample.reference
    return Sample(sample.fn, map_tensors(sample.args, lambda t: t * factor if t.dtype == reference else t),
                  map_tensors(sample.kwargs, lambda t: t * factor if t.dtype == reference else t))


def compare(sample: Sample, dcode: str) -> str | None:
    """overflow / precision / None: ``dcode`` against float32 on the same rounded inputs."""
    dtype = CODES[dcode]
    low = sample.cast(lambda i: dtype)
    reference = low.cast(lambda i: torch.float32)  # the same values, rounded to ``dtype`` first
    result_low, error_low = low.run()
    result_ref, error_ref = reference.run()
    if error_low or error_ref:
        return None
    outs_low, outs_ref = tensor_outputs(result_low), tensor_outputs(result_ref)
    if not outs_low or not outs_ref or not outs_low[0].is_floating_point() or outs_low[0].shape != outs_ref[0].shape:
        return None
    a, b = outs_low[0].detach().double(), outs_ref[0].detach().double()
    finite_ref = torch.isfinite(b)
    if bool((~torch.isfinite(a) & finite_ref).any()):
        return "overflow"
    both = finite_ref & torch.isfinite(a)
    if not bool(both.any()):
        return None
    scale = float(b[both].abs().max())
    if scale == 0:
        return None
    error = float((a[both] - b[both]).abs().max()) / scale
    return "precision" if error > RANGE_TOLERANCE[dcode] else None


def range_probe(sample: Sample, low_codes: list[str]) -> dict:
    found: dict[str, list] = {}
    long_input = None
    operands = sample.operands()
    if len(operands) == 1 and operands[0].dim() >= 1:
        torch.manual_seed(0)
        long_input = Sample(sample.fn, [torch.rand(4096) * 8], {}) if len(sample.args) == 1 or _reduction_like(sample) else None
    for dcode in low_codes:
        for scale in RANGE_SCALES:
            scaled = _scaled(sample, scale)
            verdict = compare(scaled, dcode) if scaled is not None else None
            if verdict:
                found[dcode] = [verdict, scale]
                break
        else:
            if long_input is not None:
                verdict = compare(long_input, dcode)
                if verdict:
                    found[dcode] = [verdict, "long"]
    return found


def rounding_probe(sample: Sample) -> dict:
    """{dtype: scale}: the smallest scale (|x| <= scale) at which rounding the float32 inputs to
    float16/bfloat16, the op itself then run in float32, moves the result by more than the
    tolerance (relative to the result's largest magnitude). Ops that amplify their argument's
    absolute error do: ``sin``/``cos`` lose the phase once an angle's spacing in the low dtype
    (0.125 rad at 256 in float16, 2 rad in bfloat16) is a sizeable part of a turn; ``mul``/``add``
    keep the inputs' relative error and never do. This is the error of computing an argument (an
    angle ``pos * freq``) in a low dtype before the op, even where the op itself runs in float32."""
    found: dict[str, float] = {}
    for dcode in LOW:
        for scale in RANGE_SCALES:
            scaled = _scaled(sample, scale)
            if scaled is None:
                break
            rounded = scaled.cast(lambda i, d=CODES[dcode]: d).cast(lambda i: torch.float32)
            result_exact, error_exact = scaled.run()
            result_rounded, error_rounded = rounded.run()
            if error_exact or error_rounded:
                break
            exact, near = tensor_outputs(result_exact), tensor_outputs(result_rounded)
            if not exact or not near or not (exact[0].is_floating_point() or exact[0].is_complex()) or exact[0].shape != near[0].shape:
                break
            a, b = near[0].detach().double(), exact[0].detach().double()
            both = torch.isfinite(a) & torch.isfinite(b)
            if not bool(both.any()):
                break
            peak = float(b[both].abs().max())
            if peak and float((a[both] - b[both]).abs().max()) / peak > RANGE_TOLERANCE[dcode]:
                found[dcode] = scale
                break
    return found


def _reduction_like(sample: Sample) -> bool:
    return getattr(sample.fn, "__name__", "") in ("sum", "prod", "cumsum", "cumprod", "mean", "var", "std", "norm",
                                                  "logsumexp", "softmax", "log_softmax", "nansum", "var_mean", "std_mean")


def opinfo_public_names(op, names: dict[str, object], by_id: dict[int, list[str]]) -> list[str]:
    found: list[str] = []

    def add(name):
        # ``torch.half`` is a dtype, not the op ``half``
        if name in names and name not in found and callable(names[name]) and not isinstance(names[name], torch.dtype):
            found.append(name)

    add(f"torch.{op.name}")
    for candidate in by_id.get(id(op.op), ()):
        add(candidate)
    if op.method_variant is not None:
        add(f"Tensor.{getattr(op.method_variant, '__name__', op.name)}")
    for alias in op.aliases:
        add(f"torch.{alias.name}")
        if alias.method_variant is not None:
            add(f"Tensor.{getattr(alias.method_variant, '__name__', alias.name)}")
    return found


def _as_on_a_recent_gpu() -> None:
    """op_db evaluates some CUDA dtype claims at import from the GPU it finds (``bfloat16 if
    SM53OrLater``): without one, bfloat16 matmul would read as missing on CUDA. Claim an
    Ampere-or-later GPU (what bfloat16 training runs on) before op_db is imported."""
    import torch.testing._internal.common_cuda as common_cuda

    for flag in ("SM53OrLater", "SM60OrLater", "SM70OrLater", "SM75OrLater", "SM80OrLater"):
        if hasattr(common_cuda, flag):
            setattr(common_cuda, flag, True)


def opdb_entries(names, by_id, params, only=None) -> dict[str, dict]:
    from torch.testing._internal.common_methods_invocations import op_db

    groups: dict[str, list] = defaultdict(list)
    for op in op_db:
        groups[op.name].append(op)
    entries: dict[str, dict] = {}
    for name in sorted(groups):
        variants = sorted(groups[name], key=lambda o: (o.variant_test_name != "", o.variant_test_name))
        op = variants[0]
        public = opinfo_public_names(op, names, by_id)
        inplace = getattr(op.inplace_variant, "__name__", None) if op.inplace_variant is not None else None
        if not public or only and not only.intersection([*public, f"Tensor.{inplace}"]):
            continue
        # a dtype some variant (interpolate's modes, norm's orders) supports has a kernel
        supported_cpu = set().union(*(set(v.supported_dtypes("cpu")) for v in variants))
        supported_cuda = set().union(*(set(v.supported_dtypes("cuda")) for v in variants))
        reference = torch.float32 if torch.float32 in supported_cpu else next(
            (CODES[d] for d in ("fp64", "int", "bool") if CODES[d] in supported_cpu), None)
        if reference is None:
            continue
        # two operands or more, for the mix probe; matrices where there are (``matmul`` of two
        # vectors is ``dot``, with another message)
        mixing = pick(op, reference, lambda s: len(s.operands()) >= 2 and all(t.dim() > 0 for t in s.operands()),
                      prefer=lambda s: all(t.dim() == 2 for t in s.operands()))
        sample = pick(op, reference)
        if sample is None:
            continue
        accepts_dtype = any("dtype" in params.get(p.rsplit(".", 1)[-1], ()) for p in public)
        entry = guarded(probe_samples, sample, code(reference), supported_cpu, supported_cuda, accepts_dtype, name,
                        mixing)
        if not entry:
            continue
        entry["src"] = "op_db"
        for public_name in public:
            entries.setdefault(public_name, dict(entry))
        if inplace and f"Tensor.{inplace}" in names and f"Tensor.{inplace}" not in entries and (not only or f"Tensor.{inplace}" in only):
            variant = Sample(op.inplace_variant, sample.args, sample.kwargs)
            found = guarded(probe_samples, variant, code(reference), supported_cpu, supported_cuda, False, name)
            if found:
                found["src"] = "op_db"
                entries[f"Tensor.{inplace}"] = found
    return entries


# -- generic probes for the rest ----------------------------------------------------------------
def device_gaps() -> dict[str, dict]:
    """Dtypes a device has no kernel for in any op: those no op of op_db claims there
    (``OpInfo.dtypesIfMPS``). On MPS that is float64: Metal has no double, so even making a
    float64 tensor there raises (``Cannot convert a MPS Tensor to float64 dtype as the MPS
    framework doesn't support float64``). Read from the claims, no device needed."""
    from torch.testing._internal.common_methods_invocations import op_db

    found: dict[str, dict] = {}
    for device in ("mps",):
        claimed: set = set()
        for op in op_db:
            try:
                claimed |= set(op.supported_dtypes(device))
            except Exception:  # noqa: BLE001 - an OpInfo without claims for the device: no fact
                continue
        if claimed:
            found[device] = {"none": sorted(c for c, dtype in CODES.items() if dtype not in claimed), "src": "op_db"}
    return found


def _tensor(shape=(3, 3)):
    torch.manual_seed(0)
    return torch.rand(*shape) * 4 + 0.5


FUNCTION_FORMS = (
    lambda x: ((x,), {}), lambda x: ((x, x), {}), lambda x: ((x, 0), {}), lambda x: ((x, 1), {}),
    lambda x: ((x.reshape(1, 1, 3, 3), 2), {}),  # ``F.unfold(images, kernel_size)``
    lambda x: ((x,), {"dim": 0}), lambda x: (([x, x],), {}), lambda x: ((x, x, x), {}), lambda x: ((x, 2), {}),
    lambda x: ((x, x, 0), {}), lambda x: ((x, [0]), {}), lambda x: ((x, 0, 1), {}),
)
METHOD_FORMS = (
    lambda x: ((), {}), lambda x: ((x,), {}), lambda x: ((0,), {}), lambda x: ((1,), {}), lambda x: ((), {"dim": 0}),
    lambda x: ((x, x), {}), lambda x: ((2,), {}), lambda x: ((0, 1), {}), lambda x: (([0],), {}),
    lambda x: ((3, 3), {}),
)
FACTORY_FORMS = ((2, 3), ((2, 3),), (3,), (0, 3), (0.0, 3.0), (0, 1, 5), ([1.0, 2.0],), ([1, 2],), ((2, 3), 1.5),
                 ((2, 3), 1), (3, (2, 3)), ((2, 3), (3, 1)), ())


def generic_entry(fn, forms, is_method: bool, accepts_dtype: bool, name: str) -> dict:
    bases = [_tensor((3, 3)), torch.arange(9).reshape(3, 3) % 3]
    if is_method:
        bases.append(_tensor((3, 3)).to_sparse())  # ``values()``, ``indices()``: sparse tensors only
    for base in bases:
        found = _generic_entry(fn, forms, is_method, accepts_dtype, name, base)
        if found:
            return found
    return {}


def _generic_entry(fn, forms, is_method: bool, accepts_dtype: bool, name: str, base) -> dict:
    for form in forms:
        args, kwargs = form(base.clone())
        if is_method:
            target = base.clone()
            sample = Sample(fn, [target, *args], kwargs)
        else:
            sample = Sample(fn, list(args), kwargs)
        result, error = sample.run()
        if error is None and tensor_outputs(result):
            entry = guarded(probe_samples, sample, code(base.dtype), set(), None, accepts_dtype, name)
            if entry:
                entry["nok"].pop("cpu", None)  # no database claim to confirm: errors here may be the form's
                if not entry["nok"]:
                    entry.pop("nok")
                entry.pop("nok_err", None)
                entry["src"] = "probe"
                return entry
    return {}


def arg_entry(fn, is_method: bool) -> dict:
    """``x.to(torch.float16)``, ``x.type_as(y)``: the output takes the dtype an argument names
    (a dtype, or another tensor's): rule ``arg``."""
    x = _tensor((3, 3))
    prefix = [x] if is_method else [x]
    by_dtype, _ = call(fn, [*prefix, torch.float16], {})
    by_tensor, _ = call(fn, [*prefix, x.to(torch.bfloat16)], {})
    outs_dtype, outs_tensor = tensor_outputs(by_dtype), tensor_outputs(by_tensor)
    if outs_dtype and outs_dtype[0].dtype == torch.float16 or outs_tensor and outs_tensor[0].dtype == torch.bfloat16:
        entry = {"out": "arg", "src": "probe"}
        keyword, _ = call(fn, [x], {"dtype": torch.float16})
        if tensor_outputs(keyword) and tensor_outputs(keyword)[0].dtype == torch.float16:
            entry["kw"] = "dtype"
        return entry
    return {}


def numpy_entry(fn) -> dict:
    """``torch.from_numpy(array)``: the array's dtype, per NumPy dtype (``same`` when it keeps it)."""
    try:
        import numpy
    except ImportError:
        return {}
    arrays = {"fp32": numpy.float32, "fp16": numpy.float16, "fp64": numpy.float64, "int": numpy.int64, "bool": numpy.bool_}
    outputs = {}
    for dcode, kind in arrays.items():
        result, error = call(fn, [numpy.ones((2, 2), dtype=kind)], {})
        outs = tensor_outputs(result) if error is None else []
        if outs:
            outputs[dcode] = code(outs[0].dtype)
    if len(outputs) < 2:
        return {}
    return {"out": classify(outputs), "src": "probe", "numpy": True}


def _observed_kind(method) -> str | None:
    """``nontensor`` / ``tensor`` from calling a Tensor method in the generic forms."""
    hook_form = lambda x: ((lambda *a: None,), {})  # noqa: E731 - ``register_hook(fn)``
    for form in (*METHOD_FORMS, hook_form):
        args, kwargs = form(_tensor((3, 3)))
        result, error = call(method, [_tensor((3, 3)).requires_grad_(), *args], kwargs)
        if error is None:
            return "tensor" if tensor_outputs(result) else "nontensor"
    return None


def factory_entry(fn) -> dict:
    """``torch.zeros(2, 3)``-like calls with Python numbers: the dtype rule of a factory."""
    seen: dict[tuple, str] = {}
    for form in FACTORY_FORMS:
        result, error = call(fn, form, {})
        outs = tensor_outputs(result) if error is None else []
        if not outs:
            continue
        with default_dtype(torch.float64):
            again, error = call(fn, form, {})
        outs64 = tensor_outputs(again) if error is None else []
        kinds = tuple(sorted({type(v).__name__ for v in _flatten(form)}))
        seen[kinds] = (code(outs[0].dtype), code(outs64[0].dtype) if outs64 else None)
    if not seen:
        return {}
    results = set(seen.values())
    entry: dict = {"src": "probe"}
    if results == {("fp32", "fp64")}:
        entry["out"] = "default"
    elif len(results) == 1:
        (first, _), = results
        entry["out"] = f"={first}"
    else:
        # the Python values decide (torch.arange(3) is int64, torch.arange(3.0) the default float)
        entry["out"] = "scalars"
    result, error = call(fn, next(iter(_working_form(fn))), {"dtype": torch.float64})
    if error is None and tensor_outputs(result) and tensor_outputs(result)[0].dtype == torch.float64:
        entry["kw"] = "dtype"
    return entry


def _working_form(fn):
    for form in FACTORY_FORMS:
        result, error = call(fn, form, {})
        if error is None and tensor_outputs(result):
            yield form
            return
    yield ()


def _flatten(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _flatten(item)
    else:
        yield value


# -- torch.nn modules -----------------------------------------------------------------------------
class _Calls(torch.overrides.TorchFunctionMode):
    """The torch functions a forward calls at its top level (nested calls run with the mode off)."""

    def __init__(self, names_by_id):
        super().__init__()
        self.names_by_id = names_by_id
        self.called: list[str] = []

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        for name in self.names_by_id.get(id(func), ()):
            if name not in self.called:
                self.called.append(name)
            break
        else:
            qualified = getattr(func, "__qualname__", "")
            if qualified.startswith("TensorBase.") or qualified.startswith("Tensor."):
                method = f"Tensor.{qualified.split('.', 1)[1]}"
                if method not in self.called and not method.startswith("Tensor.__"):
                    self.called.append(method)
        return func(*args, **(kwargs or {}))


MODULE_CONSTRUCTORS = ((), (4,), (4, 4), (4, 4, 3), (2,), (4, 2), (0.5,), (1, (2, 2)), "wrapped")
MODULE_INPUTS = ((2, 4), (2, 4, 8), (2, 4, 8, 8), (2, 4, 4, 4, 4), (2, 4, 4))


def module_entries(names, names_by_id, only=None) -> dict[str, dict]:
    from torch.testing._internal.common_modules import module_db

    infos = {f"torch.{info.name}": info for info in module_db}
    entries: dict[str, dict] = {}
    for name, obj in sorted(names.items()):
        if not is_nn_module(obj) or not name.startswith("torch.nn.") or name.count(".") != 2:
            continue
        if inspect.isabstract(obj) or obj is torch.nn.Module or only and name not in only:
            continue
        if issubclass(obj, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict, torch.nn.ParameterList,
                            torch.nn.ParameterDict)) and obj.forward is not torch.nn.Module.forward:
            # a container whose forward runs its children in order: the last child's output
            entries[name] = {"out": "children", "module": True, "src": "class"}
            continue
        if obj.forward is torch.nn.Module.forward:
            # ``ModuleList``, ``ModuleDict``: containers that cannot be called
            entries[name] = {"out": "none", "module": True, "src": "class"}
            continue
        built = _build_from_db(infos.get(name)) if name in infos else None
        if built is None:
            built = _build_generic(obj)
        if built is None:
            entries[name] = {"out": None, "src": "class", "module": True}
            continue
        module, args, kwargs = built
        entries[name] = guarded(_module_facts, module, args, kwargs, names_by_id, name) or \
            {"out": None, "src": "class", "module": True}
        entries[name]["src"] = entries[name].get("src") if entries[name].get("out") is None else (
            "module_db" if name in infos else "probe")
    return entries


def _build_from_db(info):
    try:
        with warnings.catch_warnings(), _time_limit(CALL_SECONDS):
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=False, training=False)
            for module_input in inputs:
                ctor, forward = module_input.constructor_input, module_input.forward_input
                if forward is None:
                    continue
                module = info.module_cls(*ctor.args, **ctor.kwargs)
                module.eval()
                result, error = call(module, forward.args, forward.kwargs)
                if error is None and tensor_outputs(result):
                    return module, list(forward.args), dict(forward.kwargs)
    except Exception:
        return None
    return None


def _build_generic(cls):
    for ctor in MODULE_CONSTRUCTORS:
        if ctor == "wrapped":  # a wrapper (``DataParallel``) of a float32 Linear
            torch.manual_seed(0)
            ctor = (torch.nn.Linear(4, 4),)
        module, error = call(cls, ctor, {})
        if error is not None or not isinstance(module, torch.nn.Module):
            continue
        module.eval()
        for shape in MODULE_INPUTS:
            for count in (1, 2):  # ``PairwiseDistance()(x1, x2)``
                inputs = [_tensor(shape) for _ in range(count)]
                result, error = call(module, inputs, {})
                if error is None and tensor_outputs(result) and tensor_outputs(result)[0].is_floating_point():
                    return module, inputs, {}
    return None


def _module_facts(module, args, kwargs, names_by_id, name) -> dict:
    import copy

    has_params = any(t.is_floating_point() for t in [*module.parameters(), *module.buffers()])
    entry: dict = {"module": True}
    outputs: dict[str, str] = {}
    errors: dict[str, str] = {}

    def forward(dtype_module, dtype_input):
        m = copy.deepcopy(module)
        if dtype_module is not None:
            m = m.to(dtype_module)
        a = map_tensors(args, lambda t: t.to(dtype_input) if t.is_floating_point() else t)
        k = map_tensors(kwargs, lambda t: t.to(dtype_input) if t.is_floating_point() else t)
        return call(m, a, k)

    for dcode in FLOAT_CODES:
        result, error = forward(CODES[dcode], CODES[dcode])
        if error is not None:
            errors[dcode] = error
        elif tensor_outputs(result):
            outputs[dcode] = code(tensor_outputs(result)[0].dtype)
    rule = classify(outputs)
    if rule == "same":
        rule = "module" if has_params else "same"
    entry["out"] = rule
    entry["nok"] = {"cpu": sorted(d for d in LOW if d in errors)}
    if entry["nok"]["cpu"]:
        entry["nok_err"] = errors.get("fp16") or errors.get("bf16")
    if has_params:
        # first operand: the module's parameters; then its input ("fp32+fp16": a half input
        # reaching float32 weights)
        result_a, error_a = forward(torch.float32, torch.float16)
        result_b, error_b = forward(torch.float16, torch.float32)
        found = mix_entry(result_a, error_a, result_b, error_b)
        if "err" in found and error_a:
            found["err"] = error_a
        entry.update(found)
    recorder = _Calls(names_by_id)
    with recorder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.suppress(Exception):
            module(*args, **kwargs)
    if recorder.called:
        entry["calls"] = recorder.called[:8]
    return entry


# -- autocast on CUDA -------------------------------------------------------------------------------
def cuda_autocast_lists() -> dict[str, str]:
    """Public op name (last component) -> lower / fp32 / promote on CUDA."""
    from torch.testing._internal.autocast_test_lists import AutocastTestLists

    lists = AutocastTestLists(torch.device("cpu"))
    policy: dict[str, str] = {}

    def put(names, value):
        for name in names:
            name = ATEN_PUBLIC.get(name, name)
            policy.setdefault(name, value)

    put([op[0] for key in ("torch_fp16", "nn_fp16", "linalg_fp16", "methods_fp16") for op in getattr(lists, key)], "lower")
    put(DOCS_CUDA_LOWER, "lower")
    put([op[0] for key in ("torch_fp32", "nn_fp32", "methods_fp32") for op in getattr(lists, key)], "fp32")
    put(DOCS_CUDA_FP32, "fp32")
    put([op[0] for op in lists.torch_need_autocast_promote], "promote")
    put(DOCS_CUDA_PROMOTE, "promote")
    return policy


def apply_cuda_autocast(entries: dict[str, dict]) -> None:
    policy = cuda_autocast_lists()
    for name, entry in entries.items():
        last = name.rsplit(".", 1)[-1]
        probed = entry.get("amp", {}).get("cuda")
        listed = policy.get(last)
        if probed is not None:
            if listed is not None and listed != probed and not entry.get("module"):
                print(f"autocast on CUDA: {name} runs {probed} on fake CUDA tensors, the lists say {listed}", file=sys.stderr)
            continue
        found = listed
        if found is None and entry.get("module"):
            found = policy.get(last)  # GRUCell, LSTMCell, RNNCell by class name
            for called in entry.get("calls", ()):
                found = found or policy.get(called.rsplit(".", 1)[-1])
        if found is not None:
            entry.setdefault("amp", {})["cuda"] = found


def apply_module_kernels(entries: dict[str, dict]) -> None:
    """A module has no CUDA kernel for a dtype when a function its forward calls has none."""
    for entry in entries.values():
        if not entry.get("module") or not entry.get("calls"):
            continue
        missing: set[str] = set()
        known = [entries[c]["nok"]["cuda"] for c in entry["calls"] if "cuda" in entries.get(c, {}).get("nok", {})]
        for found in known:
            missing.update(found)
        if known:
            entry.setdefault("nok", {})["cuda"] = sorted(missing)
        if "amp" not in entry or "cpu" not in entry.get("amp", {}):
            for called in entry["calls"]:
                amp_cpu = entries.get(called, {}).get("amp", {}).get("cpu")
                if amp_cpu:
                    entry.setdefault("amp", {})["cpu"] = amp_cpu
                    break


# -- promotion tables ----------------------------------------------------------------------------
def promotion_tables() -> dict:
    pairs = {}
    for a in CODES:
        for b in CODES:
            pairs[f"{a}+{b}"] = code(torch.promote_types(CODES[a], CODES[b]))
    scalars = {}
    for a in CODES:
        x = torch.ones(2, dtype=CODES[a])
        for kind, value in (("float", 1.5), ("int", 2), ("bool", True)):
            scalars[f"{a}+{kind}"] = code(torch.result_type(x, value))
    return {"tensor": pairs, "scalar": scalars}


# -- the catalogue's kinds --------------------------------------------------------------------------
def catalogue_kind(name: str, obj, returns: dict[str, set[str]]) -> str:
    if isinstance(obj, types.ModuleType):
        return "namespace"
    if isinstance(obj, torch.dtype):
        return "dtype:" + code(obj)
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        kind = annotation_kind(obj) or return_kind(returns.get(name.rsplit(".", 1)[-1], set()))
        return {"tensor": "tensor", "nontensor": "nontensor"}.get(kind, "unknown")
    return "value"


def build(only: set[str] | None = None) -> dict:
    """The data; with ``only``, just those names' entries (and what they depend on, probed)."""
    requested = only
    _as_on_a_recent_gpu()  # before anything imports op_db (common_modules does)
    torch.set_grad_enabled(False)
    names = catalogue()
    by_id: dict[int, list[str]] = defaultdict(list)
    for name, obj in names.items():
        if not isinstance(obj, (int, float, str, bool, type(None))):
            by_id[id(obj)].append(name)
    returns = stub_returns()
    _STUB_RETURNS.update(returns)
    params = stub_params()

    modules = module_entries(names, by_id, only)
    if only:  # a module's kernels and autocast come from the functions it calls: probe those too
        only = set(only) | {called for entry in modules.values() for called in entry.get("calls", ())}
    # first the calls whose output an argument names: op_db's samples of ``to`` pass one
    entries = {}
    for name, obj in sorted(names.items()):
        if (name.startswith("Tensor.") and callable(obj) and not name.endswith("_") and name.rsplit(".", 1)[-1] not in _NEVER_CALL
                and (not only or name in only)):
            found = arg_entry(obj, True)
            if found:
                entries[name] = found
    entries.update({k: v for k, v in opdb_entries(names, by_id, params, only).items() if k not in entries})
    entries.update({k: v for k, v in modules.items() if k not in entries})
    # everything else that returns a tensor: probe
    observed: dict[str, str] = {}
    for name, obj in sorted(names.items()):
        if name in entries or (only and name not in only):
            continue
        if isinstance(obj, types.ModuleType) or is_nn_module(obj) or not callable(obj):
            continue
        last = name.rsplit(".", 1)[-1]
        if last in _NEVER_CALL:
            continue
        top = name.startswith(("torch.", "Tensor.")) and name.count(".") == 1 or name.startswith(
            ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.", "torch.nn.init.",
             "torch.nn.utils.rnn.", "torch.nn.utils.clip_grad"))
        if not top:
            continue
        kind = annotation_kind(obj) if not name.startswith("Tensor.") else None
        kind = kind or return_kind(returns.get(last, set()))
        if inspect.isclass(obj):
            if name.endswith("Tensor"):
                found = factory_entry(obj)
                if found:
                    entries[name] = found
            continue
        if kind is None and name.startswith("Tensor."):
            kind = _observed_kind(obj)  # ``x.is_shared()``: call it and look
            if kind == "nontensor":
                observed[name] = kind
        if kind != "tensor":
            continue
        accepts = "dtype" in params.get(last, ())
        # torch.* functions first as factories (``torch.tensor([1.0])``: the Python values decide)
        found = factory_entry(obj) if not name.startswith("Tensor.") else {}
        if not found and last in ("from_numpy", "as_tensor", "asarray"):
            found = numpy_entry(obj)
        if not found:
            found = generic_entry(obj, METHOD_FORMS if name.startswith("Tensor.") else FUNCTION_FORMS,
                                  name.startswith("Tensor."), accepts, name)
        if found:
            entries[name] = found
    for method in DEVICE_MOVES:
        if f"Tensor.{method}" in names and (not requested or f"Tensor.{method}" in requested):
            entries.setdefault(f"Tensor.{method}", {"out": "same", "src": "docs"})
    apply_cuda_autocast(entries)
    apply_module_kernels(entries)
    signatures = stub_signatures()
    for name, entry in entries.items():
        if not entry.get("module") and name in names:
            entry.update(operand_parameters(name, names[name], signatures))

    catalogue_kinds: dict[str, list[str]] = defaultdict(list)
    aliases: dict[str, str] = {}
    canonical: dict[int, str] = {}
    for name, obj in sorted(names.items(), key=lambda item: (item[0].count("."), item[0])):
        if name in entries:
            canonical.setdefault(id(obj), name)
    for name, obj in sorted(names.items()):
        if name in entries:
            continue
        if not from_torch(obj) and not isinstance(obj, (types.ModuleType, torch.dtype)):
            continue  # ``torch.cuda.Optional``: typing's, not torch's
        target = canonical.get(id(obj)) if not isinstance(obj, (int, float, str, bool, type(None))) else None
        if target is not None:
            aliases[name] = target
            continue
        catalogue_kinds[observed.get(name) or catalogue_kind(name, obj, returns)].append(name)

    messages: list[str] = []
    index: dict[str, int] = {}
    for entry in entries.values():
        for key in ("err", "nok_err", "amp_err"):
            if key in entry:
                text = entry[key]
                if text not in index:
                    index[text] = len(messages)
                    messages.append(text)
                entry[key] = index[text]
    if requested:
        entries = {k: v for k, v in entries.items() if k in requested}
    return {
        "torch": torch.__version__.split("+")[0],
        "generator": "tools/gen_torch_semantics.py",
        "dtypes": {c: str(d).replace("torch.", "") for c, d in CODES.items()},
        "promotion": promotion_tables(),
        "devices": device_gaps(),
        "ops": dict(sorted(entries.items())),
        "aliases": dict(sorted(aliases.items())),
        "catalogue": {kind: sorted(found) for kind, found in sorted(catalogue_kinds.items())},
        "messages": messages,
    }


def dump(data: dict) -> str:
    """One op per line: compact, and a regenerated file diffs op by op."""
    lines = ["{"]
    keys = list(data)
    for position, key in enumerate(keys):
        comma = "," if position < len(keys) - 1 else ""
        value = data[key]
        if key in ("ops", "aliases", "catalogue") and value:
            lines.append(f"{json.dumps(key)}: {{")
            items = list(value.items())
            for i, (name, entry) in enumerate(items):
                tail = "," if i < len(items) - 1 else ""
                lines.append(f"{json.dumps(name)}: {json.dumps(entry, sort_keys=True, separators=(',', ':'))}{tail}")
            lines.append("}" + comma)
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value, sort_keys=True, separators=(',', ':'))}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated names: probe and print only these (a quick look)")
    parser.add_argument("--print", action="store_true", help="print the entries instead of writing the file")
    parser.add_argument("--out", type=Path, help="where to write (default: dtype_lint/data/torch_semantics_<X.Y>.json)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTORCH_TEST_WITH_SLOW", "0")
    warnings.filterwarnings("ignore")
    # fake tensors log every meta kernel that refuses a sample; the probe records no fact then
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
    only = set(args.only.split(",")) if args.only else None
    data = build(only)
    if args.print or only:
        for name, entry in data["ops"].items():
            print(name, json.dumps(entry, sort_keys=True))
        return 0
    major_minor = ".".join(data["torch"].split(".")[:2])
    target = args.out or DATA / f"torch_semantics_{major_minor}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dump(data))
    print(f"wrote {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}: "
          f"{len(data['ops'])} ops, {len(data['aliases'])} aliases, "
          f"{sum(len(v) for v in data['catalogue'].values())} catalogued names, {target.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

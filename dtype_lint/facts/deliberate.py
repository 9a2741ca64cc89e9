"""Where code exercises a precision pattern on purpose (issue 14, causes 3 and 6).

On code the project had never seen, a third of the false positives were tests doing the wrong
thing deliberately (a mismatch inside ``pytest.raises``, synthetic bf16 gradients) or code run
only where its CI proved the hardware (``@RunIf(bf16_cuda=True)``). These helpers answer, for one
node, whether it sits in such a place; rules (and ``Rule.report``) decide what that means.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from dtype_lint.facts.names import dotted_name

if TYPE_CHECKING:
    from dtype_lint.context import FileContext

# A test module: pytest's discovery names, and the usual test folders.
TEST_FILE = re.compile(r"(^|/)(tests?|testing|test_utils)/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$")

# Rules that read an API's spelling, not a dtype: a deprecated call is as deprecated in a test
# (and a file that does not parse, DTL001, is broken wherever it is).
API_RULES = frozenset({"DTL001", "DTL201", "DTL210", "DTL601", "DTL701"})

# Rules whose finding is a precision set-up: a whole model cast to float16 and trained (DTL401),
# an EMA kept in float16 (DTL511), a float16 global default dtype (DTL702), fp16 autocast without
# a scaler (DTL208), a scaler with bf16 (DTL301), float16 trainable parameters (DTL302), Adam's eps
# over float16 parameters (DTL404), float16 on a bf16-pretrained checkpoint (DTL507), bf16 without
# a capability check (DTL203), a float16 model on the CPU (DTL709). In a test file the set-up is
# what the test exercises, on hardware its CI chose: on unseen repositories none of the 23 such
# findings in test files was a defect (fairseq's EMA fp16 tests, litgpt's float16 SDPA tests,
# diffusers' autocast training tests, peft's GPU example tests).
SETUP_RULES = frozenset({
    "DTL203", "DTL208", "DTL301", "DTL302", "DTL401", "DTL404", "DTL507", "DTL511", "DTL702", "DTL709",
})

# ``pytest.raises(...)`` / ``self.assertRaises(...)`` / ``assertRaisesRegex``: the body is expected to fail.
_EXPECTS_FAILURE = re.compile(r"(^|\.)(raises|assertRaises|assertRaisesRegex|assertRaisesRegexp)$")

# A decorator keyword that requires bf16 hardware: ``@RunIf(bf16_cuda=True)``,
# ``@require(bf16=True)``, ``@skip_unless(bfloat16_supported=True)``.
_BF16_REQUIREMENT = re.compile(r"bf16|bfloat16", re.IGNORECASE)


def is_test_file(path: str) -> bool:
    return bool(TEST_FILE.search(path.replace("\\", "/")))


# A test function named for the precision machinery it exercises: Lightning's
# ``test_torch_autocast_cache_behavior_with_no_grad`` runs ``loss.backward()`` inside autocast to
# document a torch bug (pytorch#165068), ``test_amp_*``, ``test_*_scaler_*``, ``test_*_fp16_*``.
_PRECISION_TEST = re.compile(
    r"^test.*?(autocast|(?<![a-z])amp(?![a-z])|scaler|unscale|precision|fp16|bf16|(?<![a-z])half|bfloat16|float16|tf32)",
    re.IGNORECASE,
)


def in_precision_test(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``node`` is inside a test function named for a precision mechanism (autocast, AMP, a
    scaler, a half dtype): the pattern there is what the test exercises."""
    return any(isinstance(a, cst.FunctionDef) and _PRECISION_TEST.search(a.name.value) for a in _ancestors(ctx, node))


# A speed benchmark, by its file name: ``bench.py``, ``benchmark_*.py``, ``*_bench.py``. Its
# training steps are timed, not kept (nanoGPT's bench.py prints tokens/s and MFU): a hazard that
# only degrades what the model learns changes nothing the file reports. The folder is not read (a
# ``benchmarks/`` folder also holds real-bug reproductions, this project's among them).
BENCHMARK_FILE = re.compile(r"(^|/|_)bench(mark)?s?(_[^/]*)?\.py$")


def is_benchmark_file(path: str) -> bool:
    return bool(BENCHMARK_FILE.search(path.replace("\\", "/")))


def _ancestors(ctx: FileContext, node: cst.CSTNode):
    current = ctx.parent(node)
    while current is not None:
        yield current
        current = ctx.parent(current)


def expects_failure(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``node`` runs inside ``with pytest.raises(...)`` (or unittest's ``assertRaises``): the test
    exercises the failure on purpose."""
    for ancestor in _ancestors(ctx, node):
        if not isinstance(ancestor, cst.With):
            continue
        for item in ancestor.items:
            call = item.item
            if isinstance(call, cst.Call) and _EXPECTS_FAILURE.search(dotted_name(call.func) or ""):
                return True
    return False


def requires_bf16_hardware(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A function or class around ``node`` is decorated with a call whose keyword names bf16 and
    is true (``@RunIf(bf16_cuda=True)``): it runs only where bf16 is supported."""
    for ancestor in _ancestors(ctx, node):
        if not isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            continue
        for decorator in ancestor.decorators:
            call = decorator.decorator
            if not isinstance(call, cst.Call):
                continue
            for arg in call.args:
                if (
                    arg.keyword is not None
                    and _BF16_REQUIREMENT.search(arg.keyword.value)
                    and isinstance(arg.value, cst.Name)
                    and arg.value.value == "True"
                ):
                    return True
    return False

"""Runtime message families (../shared/RULES.md section 3) and the rules each one supports.

Messages vary by op and by dtype order ("got Float and Half" / "got Half and Float"), so each
family is a handful of patterns, never one exact string.
"""

from __future__ import annotations

import dataclasses
import re

# Rules whose defect shows as two floating dtypes meeting in one op.
MISMATCH_CODES = (
    "DTL101", "DTL102", "DTL103", "DTL104", "DTL105", "DTL206", "DTL402", "DTL403", "DTL405",
    "DTL107", "DTL108", "DTL508", "DTL602", "DTL702", "DTL703",
)
# Rules whose defect shows as inf or NaN appearing in low precision.
NONFINITE_CODES = ("DTL401", "DTL404", "DTL501", "DTL502", "DTL503", "DTL504", "DTL505", "DTL507", "DTL702")
# What a loss already inf/NaN before scaling, or a GradScaler skipping every step, speaks for:
# something overflowed (or divided by zero) in low precision.
OVERFLOW_CODES = ("DTL503", "DTL505", "DTL501", "DTL502", "DTL504", "DTL401", "DTL302", "DTL702")


@dataclasses.dataclass(frozen=True)
class Family:
    name: str
    label: str  # the message id in RULES.md section 3
    patterns: tuple[str, ...]
    codes: tuple[str, ...]

    def matches(self, text: str) -> bool:
        return any(re.search(pattern, text) for pattern in self.patterns)


FAMILIES: tuple[Family, ...] = (
    Family("grad-dtype", "m17", (r"assign a gradient with dtype", r"grad_dtype"), ("DTL402",)),
    Family("unscale-fp16", "m9", (r"Attempting to unscale FP16 gradients",), ("DTL302", "DTL401")),
    Family("bf16-unscale", "m10", (r"non_finite_check_and_unscale.*BFloat16",), ("DTL301",)),
    Family(
        "scaler-state",
        "m11",
        (
            r"step\(\) has already been called since the last update",
            r"unscale_\(\) has already been called on this optimizer",
            r"Attempted step but _scale is None",
            r"No inf checks were recorded",
        ),
        ("DTL304", "DTL305", "DTL306"),
    ),
    Family("bce-autocast", "m12", (r"binary_cross_entropy.*unsafe to autocast",), ("DTL207",)),
    Family("bf16-unsupported", "m13", (r"does not support bfloat16",), ("DTL203",)),
    Family(
        "half-overflow-literal",
        "m15",
        (r"value cannot be converted to type .*without overflow",),
        ("DTL501", "DTL502"),
    ),
    Family("anomaly-nan", "m16", (r"returned nan values in its \d+\w* output",), NONFINITE_CODES),
    Family("optimizer-state-dtype", "m18", (r"expected dtype .* for `end` but got dtype",), ("DTL403", "DTL405")),
    Family("tf32-mixed-api", "m19", (r"allow_tf32_new", r"mix of the legacy and new APIs"), ("DTL701",)),
    Family(
        "collective-mismatch",
        "m21",
        (
            r"collective mismatch",
            r"Detected mismatch between collectives",
            r"TensorDtypes=",
            r"Received data size doesn't match expected size",
        ),
        ("DTL703",),
    ),
    Family("fsdp-dtype", "m22", (r"Must flatten tensors with uniform dtype",), ("DTL704",)),
    Family("numpy-bf16", "m23", (r"unsupported ScalarType BFloat16",), ("DTL604",)),
    Family(
        "int-dtype",
        "m8",
        (
            r"expected target dtype to be Long",
            r"one_hot is only applicable to index tensor",
            r"only supports boolean masks",
            r"expected scalar type Long but found",
            r"tensors used as indices must be long",
            r"to have one of the following scalar types: Long, Int",
            r"Expected dtype int32 or int64 for index",
            r"only supports floating-point dtypes for input, got: (Long|Int)",
            r"not implemented for '(Long|Int|Bool|Byte|Char|Short)'",
            r"can't be cast to the desired output type (Long|Int|Bool|Byte|Char|Short)",
        ),
        ("DTL106",),
    ),
    Family(
        "index-dtype",
        "m6",
        (
            r"index_\w+\(\): self \(\w+\) and source \(\w+\) must have the same scalar type",
            r"index_\w+\(\): self and source expected to have the same dtype",
            r"scatter\w*\(\): Expected self\.dtype to be equal to src\.dtype",
            r"Index put requires the source and destination dtypes match",
        ),
        ("DTL104",) + MISMATCH_CODES,
    ),
    # An op with no kernel (or no support) for float16/bfloat16: a model, input or default dtype made
    # low precision reached it (DTL509 names the op itself).
    Family(
        "lowp-unsupported",
        "m24",
        (
            r"not implemented for '(Half|BFloat16|ComplexHalf)'",
            r"Low precision dtypes not supported",
            r"Unsupported dtype (Half|BFloat16)",
            r"does not support (half|bfloat16|Half|BFloat16)",
            r"must be either float or double dtype",
            r"doesn't support tensors of type: (Half|BFloat16)",
        ),
        ("DTL509", "DTL101", "DTL102", "DTL401", "DTL503", "DTL702"),
    ),
    Family(
        "dtype-mismatch",
        "m1-m5, m7",
        (
            r"must have the same dtype",
            r"expected scalar type \w+ but found \w+",
            r"Input type \([\w:.]+\) and (bias|weight) type \([\w:.]+\) should be the same",
            r"mixed dtype \(CPU\): expect",
            r"input dtype \([\w.]+\) does not match weight dtype",
            r"Found dtype \w+ but expected \w+",
            r"expected both vectors to have same dtype",
            r"to have the same dtype",
            r"expected m1 and m2 to have the same dtype",
            r"Expected .* to have the same dtype",
            r"expected self and source to have same dtypes",
            r"Type promoting not supported",
            r"should have same dtype",
            r"can't be cast to the desired output type",
        ),
        MISMATCH_CODES + ("DTL207",),
    ),
)

# Warnings (m14, m20, the transformers rename) are evidence too: they name the deprecated call.
WARNING_FAMILIES: tuple[Family, ...] = (
    Family(
        "deprecated-amp-api",
        "m14",
        (r"torch\.cuda\.amp\.\w+\(args\.\.\.\)` is deprecated", r"torch\.cpu\.amp\.\w+\(args\.\.\.\)` is deprecated"),
        ("DTL201",),
    ),
    Family("deprecated-default-tensor-type", "m20", (r"set_default_tensor_type\(\) is deprecated",), ("DTL702",)),
    # torch disables an autocast whose dtype its device does not run in (float32 on the CPU).
    Family("autocast-dtype-unsupported", "DTL209", (r"autocast, but the target dtype is not supported",), ("DTL209",)),
    Family(
        "deprecated-autocast-state",
        "m14",
        (r"torch\.(get|set|is)_autocast_(gpu|cpu|xla|ipu)_\w+\([^)]*\) is deprecated",),
        ("DTL210",),
    ),
    Family("torch-dtype-kwarg", "F1", (r"`torch_dtype` is deprecated",), ("DTL601",)),
)


_LOW = r"(?:Half|BFloat16|c10::Half|c10::BFloat16|torch\.(?:cuda\.)?(?:HalfTensor|BFloat16Tensor))"
_HIGH = r"(?:Float|float|Double|double|torch\.(?:cuda\.)?(?:FloatTensor|DoubleTensor))"
# A module's input and its weights, in the message's order (input first): which side is low.
_INPUT_THEN_WEIGHT = (
    r"mat1 and mat2 must have the same dtype, but got (?P<input>\S+) and (?P<weight>\S+)",
    r"Input type \((?P<input>[\w:.]+)\) and (?:bias|weight) type \((?P<weight>[\w:.]+)\)",
)


def primary_code(family: Family, text: str) -> str:
    """The one rule a runtime-only finding of ``family`` is reported as: for a module whose input
    and weights differ, which side is low precision (a half input into a float32 layer is DTL108,
    a half layer given float32 is DTL101); otherwise the family's first rule."""
    if family.name == "dtype-mismatch":
        for pattern in _INPUT_THEN_WEIGHT:
            match = re.search(pattern, text)
            if match is None:
                continue
            given, weight = match.group("input"), match.group("weight")
            if re.fullmatch(_LOW, given) and re.fullmatch(_HIGH, weight):
                return "DTL108"
            if re.fullmatch(_HIGH, given) and re.fullmatch(_LOW, weight):
                return "DTL101"
        if re.search(r"expected m1 and m2|expected scalar type|expected both vectors", text):
            return "DTL107"  # two operands of one op (matmul, bmm, einsum, dot)
    return family.codes[0]


def classify(text: str, families: tuple[Family, ...] = FAMILIES) -> Family | None:
    for family in families:
        if family.matches(text):
            return family
    return None

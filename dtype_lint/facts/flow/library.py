"""What torch, numpy, transformers and friends do to dtypes: the tables the interpreter reads.

Names are qualified (resolved through the file's imports); methods are matched by name on a
receiver whose kind is known.
"""

from __future__ import annotations

import re

from dtype_lint.facts.flow.values import BF16, BOOL, FP16, FP32, FP64, INT
from dtype_lint.prefilter import exact_word

# torch.<name>(...) with no dtype= gives the default float dtype.
TORCH_FLOAT_FACTORIES = frozenset(
    "zeros ones empty rand randn linspace logspace eye normal empty_strided zeros_like ones_like"
    " empty_like rand_like randn_like full_like".split()
)
LIKE_FACTORIES = frozenset("zeros_like ones_like empty_like rand_like randn_like full_like randint_like".split())
TORCH_INT_FACTORIES = frozenset("randint randperm randint_like tril_indices triu_indices".split())
TORCH_BOOL_RESULT = frozenset(
    "eq ne gt lt ge le isnan isinf isfinite isclose logical_and logical_or logical_not logical_xor"
    " any all isin isneginf isposinf signbit".split()
)
TORCH_INT_RESULT = frozenset("argmax argmin argsort nonzero multinomial bucketize searchsorted numel".split())
TORCH_PROMOTING = frozenset("cat concat concatenate stack hstack vstack dstack column_stack".split())
# Legacy typed constructors and tensor types (``.type(torch.HalfTensor)``).
TENSOR_TYPES = {
    "FloatTensor": FP32, "HalfTensor": FP16, "BFloat16Tensor": BF16, "DoubleTensor": FP64,
    "LongTensor": INT, "IntTensor": INT, "ShortTensor": INT, "ByteTensor": INT, "CharTensor": INT,
    "BoolTensor": BOOL, "Tensor": FP32,
}
INT_DTYPE_NAMES = frozenset(
    "int int8 int16 int32 int64 long short uint8 uint16 uint32 uint64 int_ intp uintp".split()
)
# Dtype names as attributes of torch / numpy, or as strings.
DTYPE_WORDS = {
    "float16": FP16, "half": FP16, "fp16": FP16, "bfloat16": BF16, "bf16": BF16,
    "float32": FP32, "float": FP32, "fp32": FP32, "single": FP32, "float64": FP64, "double": FP64,
    "fp64": FP64, "float_": FP64, "bool": BOOL, "bool_": BOOL,
}
for _name in INT_DTYPE_NAMES:
    DTYPE_WORDS[_name] = INT

# Prefilter triggers (see dtype_lint.prefilter). The flow learns that a value is float16 or
# bfloat16 only from a spelling above (``torch.float16``, ``"bf16"``, ``.half()``, ``HalfTensor``)
# or from an autocast region (``torch.autocast``, ``accelerator.autocast()``, ``get_autocast_dtype``):
# a file whose code words hold none of these has no low-precision value, and a rule that needs one
# cannot fire there.
FP16_TRIGGERS = (exact_word("float16"), exact_word("half"), exact_word("fp16"), exact_word("HalfTensor"), "autocast")
LOWP_TRIGGERS = FP16_TRIGGERS + (exact_word("bfloat16"), exact_word("bf16"), exact_word("BFloat16Tensor"))

# Methods that cast (module in place; tensor to a new tensor).
CAST_METHODS = {"half": FP16, "float": FP32, "bfloat16": BF16, "double": FP64}
TENSOR_INT_METHODS = {"long": INT, "int": INT, "short": INT, "byte": INT, "char": INT, "bool": BOOL}
# Tensor methods whose result has the receiver's dtype.
SAME_DTYPE_METHODS = frozenset(
    """to cuda cpu detach clone contiguous view reshape permute transpose t unsqueeze squeeze
    flatten unflatten expand expand_as repeat repeat_interleave narrow masked_fill masked_fill_
    clamp clamp_ clip abs neg exp log log2 log10 log1p expm1 sqrt rsqrt pow square softmax
    log_softmax sigmoid tanh relu gelu silu mul mul_ add add_ sub sub_ div div_ norm var std max
    min cumsum cumprod flip roll pin_memory requires_grad_ detach_ view_as reshape_as sin cos
    float_power addcmul addcdiv lerp matmul mm bmm type_as sum mean prod amax amin logsumexp
    sort topk index_select gather index_fill masked_select select squeeze_ unsqueeze_ fill_
    zero_ copy_ uniform_ normal_ scatter scatter_add index_add index_copy nan_to_num
    nan_to_num_ round floor ceil trunc frac sign reciprocal baddbmm addmm chunk split unbind
    tile movedim swapaxes to_dense coalesce share_memory_ half_""".split()
)
BOOL_METHODS = frozenset("eq ne gt lt ge le isnan isinf isfinite logical_and logical_or logical_not any all".split())
INT_METHODS = frozenset("argmax argmin argsort nonzero multinomial".split())
# Module methods that return the module itself (no dtype change).
# torch.nn containers: float32 themselves, they keep the low dtypes of the layers they hold.
CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
MODULE_SELF_METHODS = frozenset("cuda cpu train eval requires_grad_ apply to_empty share_memory xpu mps npu".split())

NUMPY_FLOAT_FACTORIES = frozenset(
    "zeros ones empty full linspace logspace eye identity random rand randn normal uniform"
    " standard_normal random_sample sample beta gamma exponential laplace lognormal loadtxt"
    " genfromtxt zeros_like ones_like empty_like full_like".split()
)
NUMPY_INT_FACTORIES = frozenset("randint integers choice permutation bincount".split())
NUMPY_SAME_FUNCTIONS = frozenset(
    "concatenate stack hstack vstack expand_dims squeeze transpose reshape clip abs exp log sqrt"
    " flip roll tile repeat ascontiguousarray copy".split()
)
# Library functions that return float64 NumPy arrays (scikit-learn computes in float64).
FLOAT64_ARRAY_FUNCTIONS = frozenset(
    """sklearn.utils.class_weight.compute_class_weight sklearn.utils.compute_class_weight
    sklearn.utils.class_weight.compute_sample_weight sklearn.utils.compute_sample_weight""".split()
)
NUMPY_ARRAY_CONSTRUCTORS = frozenset("array asarray asanyarray ascontiguousarray".split())
# PIL: the NumPy dtype of an image's pixels by mode (``np.asarray(img.convert("RGB"))`` is uint8;
# Pillow's "Modes" documentation), the calls that make an image and the methods that keep its mode.
PIL_MODE_DTYPES = {
    "1": BOOL, "L": INT, "P": INT, "RGB": INT, "RGBA": INT, "RGBX": INT, "CMYK": INT, "YCbCr": INT,
    "LAB": INT, "HSV": INT, "LA": INT, "PA": INT, "I": INT, "I;16": INT, "F": FP32,
}
PIL_IMAGE_CALLS = frozenset("PIL.Image.open PIL.Image.new PIL.Image.fromarray".split())
PIL_SAME_MODE_METHODS = frozenset("resize crop rotate transpose copy filter reduce thumbnail".split())

OPTIMIZER_CLASS = re.compile(
    r"(Adam|SGD|RMSprop|Adagrad|Adadelta|Adamax|Lion|Adafactor|LAMB|Lamb|LBFGS|Sophia|Muon|NAdam|RAdam|Optimizer)"
)
ADAM_LIKE = re.compile(r"Adam")
OPTIMIZER_MODULES = ("torch.optim.", "transformers.", "bitsandbytes.", "bnb.", "apex.", "timm.optim.", "deepspeed.")
# Modules (torch.nn classes) whose output has exactly the module's dtype.
NN_PREFIXES = ("torch.nn.", "torch.nn.modules.")
LOSS_CLASS = re.compile(r"Loss$")
LOWERING_LAYERS = re.compile(r"^(Linear|LazyLinear|Bilinear|Conv\dd|ConvTranspose\dd|LazyConv\dd|MultiheadAttention|LSTM|GRU|RNN|LSTMCell|GRUCell|RNNCell)$")
# torch functions autocast runs in its low dtype (CUDA's float16 list): their result is the
# region's dtype whatever float the inputs are.
LOWERING_FUNCTIONS = frozenset({"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                                "conv_transpose3d", "matmul", "mm", "bmm", "baddbmm", "addmm", "addbmm", "einsum",
                                "mv", "addmv", "chain_matmul", "prelu", "scaled_dot_product_attention"})
NORM_LAYERS = re.compile(r"^(BatchNorm\dd|SyncBatchNorm|LayerNorm|GroupNorm|InstanceNorm\dd|RMSNorm|LocalResponseNorm)$")
# Base classes that make a user class an nn.Module.
MODULE_BASES = re.compile(
    r"(^torch\.nn\.(modules\.module\.)?Module$|(^|\.)(nn\.)?Module$|LightningModule$|PreTrainedModel$|ModelMixin$|"
    r"(^|\.)Sequential$|ModuleDict$|ModuleList$)"
)
# ``*.from_pretrained`` receivers that are not models.
NOT_A_MODEL = re.compile(r"(Tokenizer|Processor|FeatureExtractor|Config|Scheduler|GenerationConfig|Dataset|Pipeline$)")
PROCESSOR = re.compile(r"(Processor|FeatureExtractor)")
TOKENIZER = re.compile(r"Tokenizer")
PASS_THROUGH_CALLS = frozenset(
    """torch.compile torch.nn.parallel.DistributedDataParallel torch.nn.DataParallel
    torch.nn.parallel.DataParallel torch.jit.script torch.nn.SyncBatchNorm.convert_sync_batchnorm
    copy.deepcopy torch.nn.parallel.distributed.DistributedDataParallel
    torch.distributed.fsdp.FullyShardedDataParallel""".split()
)
PEFT_CALLS = frozenset(
    "peft.get_peft_model peft.PeftModel.from_pretrained peft.prepare_model_for_kbit_training"
    " peft.inject_adapter_in_model".split()
)
TOKEN_FIELDS = frozenset("input_ids attention_mask token_type_ids labels position_ids decoder_input_ids special_tokens_mask".split())
FLOAT_FIELDS = frozenset("pixel_values input_features input_values pixel_values_videos".split())
OUTPUT_FIELDS = frozenset(
    "logits last_hidden_state hidden_states pooler_output sample prev_sample pred_original_sample"
    " image_embeds text_embeds start_logits end_logits encoder_last_hidden_state".split()
)
EVAL_FUNCTION = re.compile(r"(^|_)(eval|evaluate|evaluation|validate|validation|val|valid|test|predict|inference|infer|generate|sample|sampling)(_|$)", re.IGNORECASE)

# Names of unknown values that are modules when cast (``model.half()``, ``build_model().half()``).
MODEL_NAME = re.compile(
    r"(^|_)(model|models|net|network|unet|vae|autoencoder|encoder|decoder|backbone|head|transformer|classifier|"
    r"text_encoder|controlnet|generator|discriminator|teacher|student|ema|module|pipe|pipeline|lm|llm)(_|$|\d)",
    re.IGNORECASE,
)


def dtype_word(text: str) -> str | None:
    return DTYPE_WORDS.get(text)

"""What numpy, transformers and friends do to dtypes, and the torch calls the interpreter
treats itself (factories that read literals, casts, containers): the tables it reads.

What torch's ops, Tensor methods and torch.nn modules give is not written here: it comes from
torch's generated semantics (dtype_lint/facts/semantics.py, through facts/flow/op_results.py).
Names are qualified (resolved through the file's imports); methods are matched by name on a
receiver whose kind is known.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dtype_lint.facts.flow.values import BF16, BOOL, FP16, FP32, FP64, INT
from dtype_lint.prefilter import exact_word

if TYPE_CHECKING:
    import libcst as cst

    from dtype_lint.facts.names import ImportTable

# torch.<name>(...) with no dtype= gives the default float dtype.
TORCH_FLOAT_FACTORIES = frozenset(
    "zeros ones empty rand randn linspace logspace eye normal empty_strided zeros_like ones_like"
    " empty_like rand_like randn_like full_like".split()
)
LIKE_FACTORIES = frozenset("zeros_like ones_like empty_like rand_like randn_like full_like randint_like".split())
TORCH_INT_FACTORIES = frozenset("randint randperm randint_like tril_indices triu_indices".split())
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
# The Python types given as a dtype (``np.array(rows, dtype=float)``, ``torch.zeros(n, dtype=float)``,
# ``a.astype(float)``): NumPy and torch both read ``float`` as float64 and ``int`` as int64.
PYTHON_TYPE_DTYPES = {"float": FP64, "int": INT, "bool": BOOL}

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
# Module methods that return the module itself (no dtype change).
# torch.nn containers: float32 themselves, they keep the low dtypes of the layers they hold.
CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
MODULE_SELF_METHODS = frozenset("cuda cpu train eval requires_grad_ apply to_empty share_memory xpu mps npu".split())

NUMPY_FLOAT_FACTORIES = frozenset(
    "zeros ones empty linspace logspace eye identity random rand randn normal uniform"
    " standard_normal random_sample sample beta gamma exponential laplace lognormal loadtxt"
    " genfromtxt zeros_like ones_like empty_like".split()
)  # not ``full``/``full_like``: they take the fill value's / the array's dtype
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
# Audio readers whose result is ``(samples, sample_rate)`` with the samples' NumPy dtype fixed by
# their documented default when no ``dtype=`` is given: soundfile's ``read`` defaults to
# dtype="float64"; librosa's ``load`` to np.float32.
AUDIO_READERS = {"soundfile.read": FP64, "librosa.load": FP32, "librosa.core.load": FP32}
# scipy.signal resamplers: a float array keeps its dtype (they filter in the input's precision).
SAME_DTYPE_ARRAY_FUNCTIONS = frozenset("scipy.signal.resample_poly scipy.signal.resample scipy.signal.decimate".split())
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
# torch.nn layers that hold no parameter and no buffer: they compute in their input's dtype, so a
# cast of them (or of the model around them) changes nothing and no input can mismatch them.
# tests/test_flow.py builds each with a live torch and checks it has neither.
PARAMETERLESS_LAYERS = frozenset(
    """Identity Flatten Unflatten ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh
    Softmax Softmin LogSoftmax Softmax2d Softplus Softsign Hardtanh Hardswish Hardsigmoid LogSigmoid
    Tanhshrink Softshrink Hardshrink Threshold GLU Dropout Dropout1d Dropout2d Dropout3d AlphaDropout
    FeatureAlphaDropout MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d
    AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d LPPool1d
    LPPool2d Upsample UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle PixelUnshuffle
    ChannelShuffle ZeroPad1d ZeroPad2d ZeroPad3d ConstantPad1d ConstantPad2d ConstantPad3d
    ReflectionPad1d ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d
    CircularPad1d CircularPad2d CircularPad3d CosineSimilarity PairwiseDistance Fold Unfold""".split()
)


def parameterless(info: object) -> bool:
    """A module value's class (``torch.nn.SiLU``) holds no parameter: see PARAMETERLESS_LAYERS."""
    if not isinstance(info, str) or not info.startswith(NN_PREFIXES):
        return False
    return info.rsplit(".", 1)[-1] in PARAMETERLESS_LAYERS


NORM_LAYERS = re.compile(r"^(BatchNorm\dd|SyncBatchNorm|LayerNorm|GroupNorm|InstanceNorm\dd|RMSNorm|LocalResponseNorm)$")
# Base classes that make a user class an nn.Module.
MODULE_BASES = re.compile(
    r"(^torch\.nn\.(modules\.module\.)?Module$|(^|\.)(nn\.)?Module$|LightningModule$|PreTrainedModel$|ModelMixin$|"
    r"(^|\.)Sequential$|ModuleDict$|ModuleList$)"
)
# diffusers' autoencoders: ``encode``/``decode`` hand their first argument to their first conv as
# given (``Encoder.forward``: ``sample = self.conv_in(sample)``; ``decode``: ``post_quant_conv(z)``),
# with no cast to the weights' dtype, so an input of another float dtype fails outside autocast:
# "Input type (float) and bias type (c10::Half) should be the same" (huggingface/diffusers#1543,
# #4424, #6231). The pipelines cast latents and pixels themselves; a training script does not.
AUTOENCODER_CLASSES = re.compile(r"^(AutoencoderKL|AsymmetricAutoencoderKL|AutoencoderKLTemporalDecoder|AutoencoderTiny|VQModel)$")
AUTOENCODER_INPUT_METHODS = frozenset({"encode", "decode"})


def autoencoder_input_method(names: "ImportTable", class_name: object, method: str) -> bool:
    """``vae.encode(x)`` on a diffusers autoencoder (``class_name`` as the flow keeps it, imported
    from diffusers): the method runs the autoencoder's layers on ``x`` as given."""
    if method not in AUTOENCODER_INPUT_METHODS or not isinstance(class_name, str):
        return False
    short = class_name.rsplit(".", 1)[-1]
    if not AUTOENCODER_CLASSES.match(short):
        return False
    qualified = names.resolve_dotted(class_name) if "." not in class_name else (class_name,)
    return any(q.startswith("diffusers.") for q in qualified)


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
# Functions that attach adapters in place to the model they are given and return it: qualified name
# -> (position, keyword) of the model argument. peft makes the adapter weights in the dtype of the
# layers they wrap (see facts/adapters.py); get_peft_model's PeftModel upcasts them instead.
ATTACH_ADAPTER_FUNCTIONS = {
    "peft.inject_adapter_in_model": (1, "model"),
    "peft.mapping.inject_adapter_in_model": (1, "model"),
}
# A transformers image processor (``CLIPImageProcessor``; the ``feature_extractor`` a diffusers
# pipeline holds for its safety checker, depth estimator or image encoder) called on images with
# ``return_tensors="pt"`` gives a BatchFeature whose ``pixel_values`` are float32 whatever the
# model's dtype: ``rescale``/``normalize`` compute in NumPy float32, and ``BatchFeature.to(device)``
# keeps the dtype (it casts only when given a dtype). Matched on the callee's name, since pipelines
# receive the processor as a component; an audio feature extractor's fields are not claimed.
IMAGE_PROCESSOR_NAME = re.compile(r"(^|[._])(feature_extractor|image_processor)$")
IMAGE_FIELD = "pixel_values"


def image_processor_call(name: str, call: "cst.Call") -> bool:
    """``self.feature_extractor(images, return_tensors="pt")``: a call, by a name that holds an
    image processor, that returns PyTorch tensors of images (``images=`` or the first positional)."""
    if not IMAGE_PROCESSOR_NAME.search(name):
        return False
    returns = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "return_tensors"), None)
    if returns is None or not (type(returns).__name__ == "SimpleString" and returns.evaluated_value == "pt"):
        return False
    if any(a.keyword is not None and a.keyword.value in ("do_rescale", "do_normalize") for a in call.args):
        return False  # without rescaling and normalising, the pixels keep the images' dtype (uint8)
    return any(a.keyword is None and not a.star or a.keyword is not None and a.keyword.value == "images" for a in call.args)


TOKEN_FIELDS = frozenset("input_ids attention_mask token_type_ids labels position_ids decoder_input_ids special_tokens_mask".split())
FLOAT_FIELDS = frozenset("pixel_values input_features input_values pixel_values_videos".split())
# diffusers' ``Pipeline.from_pretrained(name, unet=unet, torch_dtype=dt)`` loads the components
# it is not given in ``dt`` and leaves the ones passed in as they are (the loader casts only what
# it loads). The components below compute the pipeline's prompt embeddings and denoise its
# latents: one kept float32 while the rest is float16/bfloat16 meets the other's activations
# outside autocast ("Input type (c10::Half) and bias type (float) should be the same",
# huggingface/diffusers#2994, #11723). Not the VAE, the safety checker or image encoders: the
# pipelines cast latents and pixels to those themselves (an fp32 VAE is the SDXL upcast idiom).
PIPELINE_COMPUTE_COMPONENTS = frozenset(
    "unet transformer prior controlnet text_encoder text_encoder_2 text_encoder_3 decoder".split()
)
# diffusers' autoencoders (AutoencoderKL, AutoencoderKLWan, AutoencoderTiny, VQModel, AutoencoderDC,
# ConsistencyDecoderVAE...): ``vae.encode(x).latent_dist.sample()`` and ``vae.decode(z).sample`` are
# computed by the weights, in the model's dtype (DiagonalGaussianDistribution draws its noise in
# the moments' dtype).
AUTOENCODER_CLASS = re.compile(r"(Autoencoder|VQModel|VAE$)")
# diffusers' denoisers and autoencoders run their first layer on the input as given, with no cast
# to their own dtype (UNet2DConditionModel's ``self.conv_in(sample)``, the DiT transformers'
# ``self.x_embedder(hidden_states)`` / ``PatchEmbed.proj``, ControlNetModel's ``conv_in``, the
# autoencoders' ``encoder.conv_in``): a float32 input to a float16 one fails ("Input type (float) and
# bias type (c10::Half) should be the same"), unlike the transformers vision models that cast
# ``pixel_values`` themselves (ViT, CLIP). Matched on the class name's last part.
DIFFUSERS_UNCAST_INPUT_MODELS = re.compile(
    r"^(UNet\w*Model|\w*ControlNet\w*Model|\w*Transformer[23]DModel|\w*DiT2DModel|PriorTransformer|"
    r"Autoencoder\w*|VQModel)$"
)


def runs_input_as_given(info: object) -> bool:
    """A module value's class is a diffusers model that never casts its input: see
    DIFFUSERS_UNCAST_INPUT_MODELS."""
    return isinstance(info, str) and bool(DIFFUSERS_UNCAST_INPUT_MODELS.match(info.rsplit(".", 1)[-1]))


# diffusers' schedulers: ``add_noise(original_samples, noise, timesteps)`` and ``scale_noise(sample,
# timestep, noise)`` cast their coefficients to the samples' dtype and return ``coef * samples +
# coef * noise``: the promotion of the samples' and the noise's dtypes. Method -> ((position,
# keyword) of the samples, (position, keyword) of the noise).
SCHEDULER_NOISE_METHODS = {
    "add_noise": ((0, "original_samples"), (1, "noise")),
    "scale_noise": ((0, "sample"), (2, "noise")),
}
SCHEDULER_NAME = re.compile(r"scheduler", re.IGNORECASE)
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


def dtype_constant(names: "ImportTable", node: "cst.BaseExpression") -> str | None:
    """``torch.float16``, ``T.half``, ``np.float64``, ``torch.HalfTensor``: a dtype or None."""
    for qualified in names.qualified_names(node):
        module, _, attr = qualified.rpartition(".")
        if module in ("torch", "numpy", "torch.cuda") and (attr in DTYPE_WORDS or attr in TENSOR_TYPES):
            if module == "torch" and attr in ("float", "int", "long", "bool", "double", "half", "short") or attr in DTYPE_WORDS:
                if module == "numpy" and attr == "float":
                    continue
                return DTYPE_WORDS.get(attr)
            return TENSOR_TYPES.get(attr)
    return None

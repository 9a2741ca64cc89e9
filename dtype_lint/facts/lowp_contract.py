"""Library contracts: the tensors a library hands a class's methods in float16/bfloat16.

Where no caller in the program says what dtype a parameter has, a library's documented way of
running the class may: diffusers loads its pipelines with ``torch_dtype=torch.float16`` (or
bfloat16), and the pipeline then calls its scheduler's ``step(model_output, timestep, sample)``
with the denoiser's output and latents in that dtype (``prepare_latents(..., prompt_embeds.dtype)``)
and ``add_noise(original_samples, noise, timesteps)`` with latents of the VAE's dtype. A scheduler
is written for those inputs: every diffusers scheduler casts its own tables to them
(``self.alphas_cumprod.to(device=..., dtype=original_samples.dtype)``).

The contract is the weak, conditional kind of ``lowp_evidence.FollowsOrigin``: the parameter is
"float16/bfloat16 on a caller's path", not in every program. Only rules that state that condition
(DTL510, DTL107, through facts/followed.py) take it, and they report only a float32 the method
fixes itself (a factory without ``dtype=``, a cast to float32 not cast back) meeting such a
parameter: a module state, a 0-dim scalar (``alphas_cumprod[t]``) or a python number never counts.

A pipeline (a ``DiffusionPipeline`` subclass) is under a second contract: ``self.vae.dtype``,
``self.transformer.dtype``, ``self.unet.dtype``... and ``self.dtype`` are the ``torch_dtype`` it
was loaded with, float16/bfloat16 on that path (the interpreter gives such a ``.dtype`` the same
conditional value), so a tensor cast to it and then mixed with a default-dtype tensor is promoted.

A class is under the contract when one of its bases, directly or through classes of the same
file, is spelled ``SchedulerMixin`` and imported from diffusers (``from diffusers import
SchedulerMixin``, ``diffusers.schedulers.scheduling_utils.SchedulerMixin``; ``DiffusionPipeline``
likewise) or, inside diffusers' own package, relatively (``from .scheduling_utils import SchedulerMixin``). The model side
(``ModelMixin.forward``) is not a contract here: a model's inputs go through its own float32
submodules and upcasts by design (timestep projections, norms), and its activations' dtype is
the module's, which the flow tracks.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from dtype_lint.facts.names import dotted_name


@dataclasses.dataclass(frozen=True)
class Contract:
    """Methods of a class derived from ``base`` (imported from ``library``) receive the named
    parameters in the low precision the library runs in, for the reason ``why``."""

    library: str
    base: str
    methods: frozenset
    parameters: frozenset
    why: str
    components: frozenset = frozenset()  # ``self.<component>.dtype`` (and ``self.dtype``) is the library's low dtype
    # component -> the methods that run its first layer on their first argument as given: a
    # component whose dtype is its own (not always the library's low one), so what it is given
    # must be cast to ``self.<component>.dtype`` (facts/own_dtype_components.py)
    own_dtype: tuple = ()
    own_dtype_why: str = ""
    # components whose output is a tensor in the library's low dtype: ``self.<name>(...)``, or
    # ``self.<name>.<method>(...)`` for (name, method) pairs (facts/pipeline_outputs.py)
    output_calls: frozenset = frozenset()
    output_methods: frozenset = frozenset()
    # component -> the keywords of the input it runs its first layer on (the first positional
    # otherwise): a component in the library's low dtype, given that input as the caller made it
    # (facts/component_inputs.py)
    dtype_inputs: tuple = ()


# diffusers autoencoders' methods that run its first layer on their first argument as given
# (``encode`` -> ``encoder.conv_in``, ``decode`` -> ``post_quant_conv``; the tiled ones likewise).
VAE_INPUT_METHODS = frozenset({"encode", "decode", "tiled_encode", "tiled_decode"})

CONTRACTS = (
    Contract(
        library="bitsandbytes",
        base="Linear8bitLt",
        methods=frozenset({"forward"}),
        parameters=frozenset({"x", "input", "hidden_states"}),
        # LLM.int8: transformers loads a ``load_in_8bit=True`` model in float16 unless told
        # otherwise, and bitsandbytes' int8 matmul takes float16 inputs (it casts others to it with a
        # warning), so an 8-bit layer's forward is given float16 activations (huggingface/peft a353716).
        why="a bitsandbytes `Linear8bitLt` runs in a model loaded with `load_in_8bit=True`, which "
            "transformers loads in float16",
    ),
    Contract(
        library="diffusers",
        base="SchedulerMixin",
        methods=frozenset({"step", "add_noise", "scale_model_input", "step_plms", "step_prk"}),
        parameters=frozenset({"sample", "model_output", "original_samples"}),
        why="a diffusers pipeline loaded with `torch_dtype=torch.float16` calls its scheduler with "
            "float16/bfloat16 latents",
    ),
    Contract(
        library="diffusers",
        base="DiffusionPipeline",
        methods=frozenset(),
        parameters=frozenset(),
        why="a diffusers pipeline loaded with `torch_dtype=torch.float16` (or bfloat16) has its models in that dtype",
        components=frozenset("vae unet transformer transformer_2 prior decoder controlnet text_encoder text_encoder_2"
                             " text_encoder_3 image_encoder".split()),
        # The VAE is the one component users keep apart: float32 while the rest runs float16/
        # bfloat16 (``pipe.vae.to(torch.float32)``, ``AutoencoderKL...from_pretrained(...,
        # torch_dtype=torch.float32)`` passed as ``vae=``, the SDXL ``force_upcast``/``upcast_vae()``
        # idiom), or in the pipeline's dtype otherwise. Its ``encode``/``decode`` run ``conv_in`` /
        # ``post_quant_conv`` on their input as given, so the pipelines cast that input to
        # ``self.vae.dtype`` (huggingface/diffusers e7f3a73, 5ded26c, 3c0a012, d4b2bfc).
        own_dtype=(("vae", VAE_INPUT_METHODS),),
        own_dtype_why="a diffusers pipeline's VAE may be kept in float32 while the pipeline runs float16/bfloat16",
        # Audio pipelines' vocoders (SpeechT5HifiGan) and the VAE's decode give the waveform or image
        # in the pipeline's dtype; loaded with ``torch_dtype=torch.bfloat16`` that is bfloat16, which
        # NumPy has no dtype for (huggingface/diffusers 90eac14: ``waveform.cpu().float()``).
        output_calls=frozenset({"vocoder"}),
        output_methods=frozenset({("vae", "decode")}),
        # The models a pipeline hands images from its ``feature_extractor`` (float32 pixel_values):
        # loaded in the pipeline's torch_dtype with the rest, so the pipelines cast what they give
        # them (``safety_checker_input.pixel_values.to(dtype)``; ``pixel_values.to(device=device,
        # dtype=dtype)`` before ``self.depth_estimator``): the DPT-hybrid depth estimator's conv
        # stem, and the safety checker's CLIP vision tower before transformers cast pixel_values
        # itself, take the input as given (huggingface/diffusers 72eae64, 05be622). Not the
        # ``image_encoder`` (a CLIPVisionModelWithProjection): it casts pixel_values itself.
        dtype_inputs=(
            ("safety_checker", ("clip_input",)),
            ("depth_estimator", ("pixel_values",)),
        ),
    ),
)


def derived_library_base(ctx, cls: cst.ClassDef, bases, depth: int = 0) -> tuple[str, str] | None:
    """The first ``(library, class name)`` of ``bases`` that ``cls`` derives from, directly or
    through classes of this file: imported from that library, or spelled bare and imported
    relatively (inside the library's own package). None when it derives from none."""
    if depth > 8:
        return None
    relative = ctx.__dict__.get("_relative_imports")
    if relative is None:
        relative = ctx.__dict__["_relative_imports"] = relative_imports(ctx.module)
    for base in cls.bases:
        spelled = dotted_name(base.value) or ""
        qualified = ctx.names.qualified_names(base.value)
        for library, name in bases:
            if any(q.split(".")[0] == library and q.rsplit(".", 1)[-1] == name for q in qualified) \
                    or spelled == name and spelled in relative:
                return library, name
        local = next((s for s in ctx.module.body if isinstance(s, cst.ClassDef) and s.name.value == spelled
                      and s is not cls), None)
        if local is not None:
            found = derived_library_base(ctx, local, bases, depth + 1)
            if found is not None:
                return found
    return None


def relative_imports(module: cst.Module) -> frozenset:
    """The names the file imports by a relative ``from .x import Name`` (module level)."""
    found = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.ImportFrom) and small.relative and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    if alias.asname is None and isinstance(alias.name, cst.Name):
                        found.add(alias.name.value)
    return frozenset(found)


def base_contract(spelled: str, qualified: tuple, relative: frozenset) -> Contract | None:
    """The contract a base class spelled ``spelled`` (resolving to ``qualified``) brings."""
    for contract in CONTRACTS:
        if any(q.split(".")[0] == contract.library and q.rsplit(".", 1)[-1] == contract.base for q in qualified):
            return contract
        if spelled == contract.base and spelled in relative:
            return contract  # inside the library's own package
    return None


def component_dtype(node: cst.Attribute, contract: Contract | None) -> str | None:
    """``self.vae.dtype`` / ``self.dtype`` in a class under ``contract``: the component it names
    ("self" for the pipeline's own), else None."""
    if contract is None or not contract.components or node.attr.value != "dtype":
        return None
    owner = node.value
    if isinstance(owner, cst.Name) and owner.value == "self":
        return "self"
    if isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) and owner.value.value == "self" \
            and owner.attr.value in contract.components:
        return owner.attr.value
    return None


def contract_parameters(function: cst.FunctionDef, contract: Contract | None) -> dict:
    """parameter name -> its ``cst.Param`` for the parameters ``contract`` gives a low dtype in
    the method ``function`` (empty when it is none of the contract's methods)."""
    if contract is None or function.name.value not in contract.methods:
        return {}
    params = (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params)
    return {p.name.value: p for p in params if p.name.value in contract.parameters}

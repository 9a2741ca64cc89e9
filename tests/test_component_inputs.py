"""An image processor's pixel_values are float32 (facts/flow/library.py ``image_processor_call``),
and a diffusers pipeline's safety checker / depth estimator given them uncast is reported
(facts/component_inputs.py, DTL101); fixtures/frameworks/pipeline_{safety_checker,depth_estimator}_*
hold the programs."""

from test_flow import Probe

from dtype_lint.config import Settings
from dtype_lint.engine import check_text


def test_image_processor_pixel_values_are_float32_and_moving_keeps_them():
    p = Probe(
        """
        import torch
        def preprocess(feature_extractor, image_processor, images, device):
            a = feature_extractor(images, return_tensors="pt").pixel_values
            b = image_processor(images=images, return_tensors="pt").to(device)
            c = b.pixel_values
            d = b.to(device, dtype=torch.float16).pixel_values
            return a, c, d
        """
    )
    assert p.value("a", 4).dtypes == {"fp32"} and not p.value("a", 4).partial
    assert p.value("c", 6).dtypes == {"fp32"}
    assert p.value("d", 7).dtypes == {"fp16"}  # ``BatchFeature.to(dtype=...)`` casts its float fields


def test_image_processor_attribute_of_a_pipeline():
    p = Probe(
        """
        class P:
            def run(self, image):
                inputs = self.feature_extractor(self.numpy_to_pil(image), return_tensors="pt")
                return inputs.pixel_values
        """
    )
    assert p.value("inputs.pixel_values", 5).dtypes == {"fp32"}


def test_other_processor_outputs_are_not_claimed():
    p = Probe(
        """
        def run(feature_extractor, image_processor, audio, images):
            a = feature_extractor(audio, sampling_rate=16000, return_tensors="pt").input_features
            b = image_processor(images, return_tensors="np").pixel_values
            c = feature_extractor(images, return_tensors="pt").input_ids
            d = image_processor(images, do_rescale=False, return_tensors="pt").pixel_values
            return a, b, c, d
        """
    )
    for name, line in (("a", 3), ("b", 4), ("c", 5), ("d", 6)):
        value = p.value(name, line)
        assert value is None or value.dtypes != {"fp32"}, name


def test_a_loaded_image_processor_called_positionally_gives_images_not_tokens():
    p = Probe(
        """
        from transformers import CLIPImageProcessor
        processor = CLIPImageProcessor.from_pretrained("openai/clip-vit-base-patch32")
        image_processor = processor
        x = image_processor(images_list, return_tensors="pt").pixel_values
        """
    )
    assert p.value("x", 5).dtypes == {"fp32"}


PIPELINE = """
from diffusers import DiffusionPipeline

class P(DiffusionPipeline):
    def check(self, image, device, prompt_embeds):
        init = image.to(device=device, dtype=prompt_embeds.dtype)
        inputs = self.feature_extractor(self.numpy_to_pil(image), return_tensors="pt").to(device)
        return self.safety_checker(images=image, clip_input=inputs.pixel_values{cast}), init
"""


def _dtl101_lines(source):
    return [f.line for f in check_text(source, "p.py", Settings()).findings if f.code == "DTL101"]


def test_reported_at_the_move_without_dtype_and_silent_once_cast():
    assert _dtl101_lines(PIPELINE.format(cast="")) == [7]
    assert _dtl101_lines(PIPELINE.format(cast=".to(prompt_embeds.dtype)")) == []


def test_silent_for_a_component_outside_the_catalog_and_outside_a_pipeline():
    assert _dtl101_lines(PIPELINE.format(cast="").replace("self.safety_checker", "self.watermarker")) == []
    assert _dtl101_lines(PIPELINE.format(cast="").replace("(DiffusionPipeline)", "")) == []


INT8_LAYER = """
import torch.nn as nn
{imports}

class L({base}):
    def __init__(self, n, r):
        super().__init__(n, n)
        self.down = nn.Linear(n, r, bias=False)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        out = super().forward(x)
        return out, self.down(self.drop(x))
"""


def _dtl108_lines(source):
    return [f.line for f in check_text(source, "p.py", Settings()).findings if f.code == "DTL108"]


def test_an_8bit_layer_s_float32_adapter_given_its_input_is_reported():
    assert _dtl108_lines(INT8_LAYER.format(imports="import bitsandbytes as bnb", base="bnb.nn.Linear8bitLt")) == [13]


def test_not_for_a_plain_linear_or_a_4bit_layer():
    # nn.Linear's input dtype is its callers'; a 4-bit layer computes in its compute dtype
    assert _dtl108_lines(INT8_LAYER.format(imports="", base="nn.Linear")) == []
    assert _dtl108_lines(INT8_LAYER.format(imports="import bitsandbytes as bnb", base="bnb.nn.Linear4bit")) == []


def test_a_processor_s_pixel_values_are_never_token_ids():
    p = Probe(
        """
        from transformers import CLIPProcessor
        processor = CLIPProcessor.from_pretrained("openai/clip-vit-base-patch32")
        x = processor(texts, images, return_tensors="pt").pixel_values
        """
    )
    value = p.value("x", 4)
    assert value is None or "int64" not in value.dtypes and "int" not in value.dtypes


DEPTH = """
import contextlib
import torch
from diffusers import DiffusionPipeline

class P(DiffusionPipeline):
    def depth(self, image, device, dtype):
        pixel_values = self.feature_extractor(images=image, return_tensors="pt").pixel_values
        pixel_values = pixel_values.to(device=device)
        context = {context}
        with context:
            return self.depth_estimator(pixel_values).predicted_depth, image.to(dtype=dtype)
"""


def test_an_autocast_that_is_a_null_context_on_one_path_does_not_cover_the_call():
    either = 'contextlib.nullcontext() if device.type == "mps" else torch.autocast(device.type, dtype=dtype)'
    assert _dtl101_lines(DEPTH.format(context=either)) == [9]
    assert _dtl101_lines(DEPTH.format(context="torch.autocast(device.type, dtype=dtype)")) == []

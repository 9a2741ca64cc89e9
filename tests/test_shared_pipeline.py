"""DTL403 through a library pipeline that holds the module being trained (facts/pipelines.py)."""

import textwrap

import pytest

from dtype_lint.config import Settings
from dtype_lint.engine import check_text
from dtype_lint.findings import Confidence

TRAIN = """\
import torch
from diffusers import FluxPipeline


def log_validation(pipeline, args, accelerator, torch_dtype):
    pipeline = pipeline.to(accelerator.device, {move})
    return pipeline(args.prompt).images


def main(args, accelerator, transformer, loader):
    weight_dtype = torch.float16 if accelerator.mixed_precision == "fp16" else torch.bfloat16
    optimizer = torch.optim.AdamW([p for p in transformer.parameters() if p.requires_grad], lr=1e-4)
    transformer, optimizer = accelerator.prepare(transformer, optimizer)
    for step, batch in enumerate(loader):
        accelerator.backward(transformer(**batch).sample.float().pow(2).mean())
        optimizer.step()
        if step % 100 == 0:
            pipeline = FluxPipeline.from_pretrained(args.model, {held}, torch_dtype=weight_dtype)
            log_validation(pipeline, args, accelerator, weight_dtype)
"""


def dtl403(move: str, held: str = "transformer=accelerator.unwrap_model(transformer)"):
    source = TRAIN.format(move=move, held=held)
    report = check_text(source, "train.py", Settings(select=("DTL403",), min_confidence=Confidence.LOW))
    assert not report.internal_errors, report.internal_errors
    return [(f.line, f.confidence) for f in report.findings]


def test_a_helper_casting_the_pipeline_that_holds_the_trained_module_is_dtl403():
    assert dtl403("dtype=torch_dtype") == [(6, Confidence.MEDIUM)]


@pytest.mark.parametrize("move, held", [
    ("dtype=torch.float32", "transformer=accelerator.unwrap_model(transformer)"),  # not a low dtype
    ("non_blocking=True", "transformer=accelerator.unwrap_model(transformer)"),  # only moved
    ("dtype=torch_dtype", "revision=None"),  # a fresh pipeline: nothing trained inside
])
def test_casts_that_leave_the_trained_module_alone_are_clean(move, held):
    assert dtl403(move, held) == []

"""Library contracts (facts/lowp_contract.py), 0-dim promotion (facts/flow/tensor_rank.py) and the
flow facts they need: a diffusers scheduler's latents are float16/bfloat16 on the pipeline's path
(the conditional "follows" view only); a 0-dim entry of a float32 table does not promote them; an
``__init__`` constant another method resets does not decide a branch."""

from test_flow import Probe


SCHEDULER = """
import torch
from diffusers import SchedulerMixin

class S(SchedulerMixin):
    def __init__(self, n: int = 1000):
        self.alphas_cumprod = torch.cumprod(1.0 - torch.linspace(0.0001, 0.02, n), dim=0)
        self.num_inference_steps = None

    def set_timesteps(self, num_inference_steps: int):
        self.num_inference_steps = num_inference_steps

    def step(self, model_output, timestep: int, sample):
        if self.num_inference_steps is None:
            raise ValueError("x")
        alpha = self.alphas_cumprod[timestep]
        pred = (sample - (1 - alpha) ** 0.5 * model_output) / alpha ** 0.5
        return pred

    def add_noise(self, original_samples, noise, timesteps):
        sqrt_alpha = self.alphas_cumprod[timesteps] ** 0.5
        return sqrt_alpha * original_samples + noise
"""


def test_the_contract_seeds_the_scheduler_latents_in_the_follows_view_only():
    p = Probe(SCHEDULER)
    node = p.node("sample", 17)
    value = p.flow.value_of(node, follows=True)
    assert value.dtypes == {"fp16", "bf16"} and value.partial
    assert "torch_dtype=torch.float16" in value.since("fp16")
    assert not p.flow.value_of(node).dtypes


def test_a_zero_dim_table_entry_keeps_the_latents_dtype():
    p = Probe(SCHEDULER)
    pred = p.flow.value_of(p.node("pred", 17), follows=True)
    assert pred.dtypes == {"fp16", "bf16"}  # not float32: alpha is 0-dim (and fp16 with bf16 never meet)


def test_an_entry_indexed_by_a_tensor_is_not_zero_dim():
    p = Probe(SCHEDULER)
    mixed = p.flow.value_of(p.node("sqrt_alpha * original_samples", 22), follows=True)
    assert "fp32" in mixed.dtypes  # ``alphas_cumprod[timesteps]``: one per batch element, it promotes


def test_known_half_times_zero_dim_float_stays_half():
    p = Probe(
        """
        import torch
        table = torch.linspace(0.0, 1.0, 10)
        x = torch.randn(4, 8, dtype=torch.float16)
        y = x * table[3]
        z = x * table
        w = x * torch.tensor(0.5)
        """
    )
    assert p.value("y", 5).dtypes == {"fp16"}
    assert p.value("z", 6).dtypes == {"fp32"}
    assert p.value("w", 7).dtypes == {"fp16"}


def test_a_class_that_is_not_a_scheduler_gets_no_contract():
    p = Probe(SCHEDULER.replace("(SchedulerMixin)", ""))
    value = p.flow.value_of(p.node("sample", 17), follows=True)
    assert value is None or not value.dtypes


def test_an_init_constant_another_method_sets_does_not_decide_a_branch():
    p = Probe(SCHEDULER)
    # the code after ``if self.num_inference_steps is None: raise`` runs
    assert p.flow.value_of(p.node("pred", 18)) is not None

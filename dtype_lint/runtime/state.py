"""The child's shared state: what the hooks and the observer learn as the program runs."""

from __future__ import annotations

import dataclasses
import os
import sys
import weakref
from typing import Any

from dtype_lint.runtime.recorder import Recorder

MAX_ORIGINS = 16
# Iterations a run may go on past --steps while a GradScaler skips every step and backs off
# (65536 halves to 1 in 16 steps).
SETTLING_ITERATIONS = 24


@dataclasses.dataclass
class State:
    recorder: Recorder
    step_limit: int
    emulated: bool
    in_scaler_step: bool = False
    in_backward: bool = False
    # Emulated torch.autocast("cuda") contexts currently entered (CUDA's fp32 op policy applies).
    cuda_autocast_depth: int = 0
    autocast_dtypes_seen: set = dataclasses.field(default_factory=set)
    scalers: Any = dataclasses.field(default_factory=weakref.WeakSet)
    # User lines that changed dtypes globally or of whole modules: [path, line, dtype].
    module_casts: list = dataclasses.field(default_factory=list)
    default_dtype_sites: list = dataclasses.field(default_factory=list)
    # Lines of the scaler protocol (scale(), a step that bypassed the scaler): GradScaler's own
    # errors (m11) raise later, in update(), and are explained by these.
    scaler_sites: list = dataclasses.field(default_factory=list)
    # Once a step left inf/NaN in the weights, every later inf/NaN descends from it: those claims
    # also point at the optimizer's construction.
    nonfinite_origins: list = dataclasses.field(default_factory=list)
    # The emulation mapped something of CUDA's (a device, autocast, GradScaler): only then does
    # the report say CUDA was emulated.
    cuda_used: bool = False
    param_cast_sites: dict = dataclasses.field(default_factory=dict)  # id(parameter) -> [[path, line]]
    scaled: Any = None  # scaled.ScaledGradients: parameters whose gradients still carry a loss scale
    # Weights went inf/NaN (an optimizer step, a scaled update): later inf/NaN descend from that.
    weights_broken: bool = False
    nonfinite_loss: bool = False  # a loss was inf/NaN before scaling: backing off cannot help
    # GradScaler updates (every process's own): how many, how many took effect, the last scale.
    scaler_updates: int = 0
    effective_updates: int = 0
    last_scale: float | None = None
    step_counts: dict = dataclasses.field(default_factory=dict)  # id(optimizer) -> steps it took
    # Checks run once when the process ends (stop, exit, SIGTERM), each at most once.
    on_end: list = dataclasses.field(default_factory=list)

    def note_cuda_used(self) -> None:
        if not self.cuda_used:
            self.cuda_used = True
            self.recorder.write({"kind": "cuda-used"})

    def origins(self) -> list[list]:
        """Lines that set up low-precision state; attached to claims those lines may explain."""
        return [entry[:2] for entry in self.module_casts + self.default_dtype_sites]

    def note_param_casts(self, params, site: list) -> None:
        """Which user lines cast each parameter (by identity: a cast keeps the Parameter object)."""
        for param in params:
            sites = self.param_cast_sites.setdefault(id(param), [])
            if site not in sites and len(sites) < MAX_ORIGINS:
                sites.append(site)

    def casts_of(self, params) -> list[list]:
        found: list[list] = []
        for param in params:
            for site in self.param_cast_sites.get(id(param), ()):
                if site not in found:
                    found.append(site)
        return found

    def note_origin(self, bucket: list, site: list | None, dtype: str) -> None:
        if site is not None and len(bucket) < MAX_ORIGINS and [*site, dtype] not in bucket:
            bucket.append([*site, dtype])

    def count_step(self, optimizer) -> None:
        """``optimizer`` is about to step. The run's iteration is the most steps any one optimizer
        took (two optimizers stepped once each are one iteration, not two); once an optimizer
        would take its ``step_limit + 1``-th step, the run ends here."""
        done = self.step_counts.get(id(optimizer), 0)
        if done >= self.step_limit and not self._scale_settling():
            if self.recorder.step > self.step_limit:
                self.stop(f"stopped after {self.recorder.step} training iterations ({self.step_limit} asked for: the run "
                          "went on while the GradScaler skipped every step and backed off its loss scale)")
            self.stop(f"stopped after {self.step_limit} training iterations")
        self.step_counts[id(optimizer)] = done + 1
        self.recorder.step = max(self.recorder.step, done + 1)

    def note_scaler_update(self, skipped: bool, scale: float) -> None:
        self.scaler_updates += 1
        self.effective_updates += not skipped
        self.last_scale = scale

    def _scale_settling(self) -> bool:
        """Every step so far was skipped for inf/NaN gradients while the loss was finite: the loss
        scale may still be backing off from its start (65536), as in many healthy runs. The run
        goes on until a step takes effect, the scale falls below 1 (then the gradients overflow
        unscaled) or SETTLING_ITERATIONS more iterations ran, so that "every step was skipped"
        is a finding only when backing off did not help."""
        return (
            self.scaler_updates > 0
            and self.effective_updates == 0
            and not self.nonfinite_loss
            and self.last_scale is not None
            and self.last_scale >= 1.0
            and self.recorder.step < self.step_limit + SETTLING_ITERATIONS
        )

    def end(self) -> None:
        checks, self.on_end = self.on_end, []
        for check in checks:
            try:
                check()
            except Exception:  # noqa: BLE001 - ending the run matters more than one last check
                pass

    def stop(self, reason: str) -> None:
        self.end()
        self.recorder.write({"kind": "stop", "reason": reason})
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(0)  # not SystemExit: a user's `except BaseException` must not keep training

"""The child's shared state: what the hooks and the observer learn as the program runs."""

from __future__ import annotations

import dataclasses
import os
import sys
import weakref
from typing import Any

from dtype_lint.runtime.recorder import Recorder

MAX_ORIGINS = 16


@dataclasses.dataclass
class State:
    recorder: Recorder
    step_limit: int
    emulated: bool
    in_scaler_step: bool = False
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

    def count_step(self) -> None:
        """One optimizer step is about to run; after ``step_limit`` of them the run ends here."""
        if self.recorder.step >= self.step_limit:
            self.stop(f"stopped after {self.step_limit} optimizer steps")
        self.recorder.step += 1

    def stop(self, reason: str) -> None:
        self.recorder.write({"kind": "stop", "reason": reason})
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(0)  # not SystemExit: a user's `except BaseException` must not keep training

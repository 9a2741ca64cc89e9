"""What the API-migration rules (DTL201, DTL210, DTL601, DTL701) share: whether the replacement
they suggest exists on the oldest release the project supports (its target, read from its
dependency declarations or configured), and what that does to the finding and its fix.

- The target has the replacement: the finding, with its fix as the rule made it.
- The target lacks it: no finding. Telling a project to use an API its oldest supported
  release lacks is advice it cannot take; ``--target-torch 2.4`` (a raised bound) shows
  what to change when the project moves.
- No target is known: the finding (the old spelling warns on current releases), but a fix that
  would break an older release is never safe: it is offered as unsafe, and the message says
  which release the replacement needs and how to declare the project's own.
"""

from __future__ import annotations

import dataclasses

from dtype_lint.findings import Fix, Safety
from dtype_lint.versions import at_least, spelled


@dataclasses.dataclass(frozen=True)
class Replacement:
    """A replacement API and the first release of ``package`` that has it."""

    package: str
    since: tuple[int, ...]

    def available(self, settings) -> bool | None:
        """True/False from the project's target; None when no target is known."""
        return at_least(getattr(settings, f"target_{self.package}"), self.since)

    def needs(self) -> str:
        return f"{self.package} >= {spelled(self.since)}"

    def unknown_note(self) -> str:
        return (f" (needs {self.needs()}; the project declares no lower bound for {self.package}: declare one,"
                f" or set `target-{self.package}`)")

    def gate_fix(self, fix: Fix | None, available: bool | None) -> Fix | None:
        if fix is None or available:
            return fix
        return dataclasses.replace(fix, safety=Safety.UNSAFE)


TORCH_AMP = Replacement("torch", (2, 0))  # torch.amp.autocast(device_type, ...)
TORCH_AMP_GRAD_SCALER = Replacement("torch", (2, 3))  # torch.amp.GradScaler(device, ...)
TORCH_AMP_CUSTOM_FWD = Replacement("torch", (2, 4))  # torch.amp.custom_fwd(*, device_type)
TORCH_AUTOCAST_STATE = Replacement("torch", (2, 4))  # torch.get_autocast_dtype(device), ...
TORCH_FP32_PRECISION = Replacement("torch", (2, 9))  # torch.backends.*.fp32_precision
TRANSFORMERS_DTYPE = Replacement("transformers", (4, 56))  # from_pretrained(dtype=...)

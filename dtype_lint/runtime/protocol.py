"""What the parent and the injected child agree on: the config going in, evidence coming out.

Evidence is one JSON object per line, appended to ``<evidence_dir>/<pid>.jsonl`` as it happens, so
a crash, a timeout or a kill loses nothing already written. Every record has ``kind``, ``rank``,
``pid`` and ``step`` (training iterations started in that process when it was written: the most
steps any one optimizer took).

Record kinds:
- ``start``: the process came up (emulated, cuda, torch version, rank, world size).
- ``claim``: something a rule predicts was seen: ``what`` (a short kind such as
  ``dtype-mismatch``), ``codes`` (the rules it supports), ``code`` (the one of them it is reported
  as when no static finding takes it), ``message``, ``stack`` (user
  ``[path, line]`` frames, innermost first), ``origins`` (user lines that set up the state that
  made it happen: the ``model.half()`` call, the optimizer's construction) and ``detail``.
- ``exception``: an uncaught exception that matched no message family (context, not a claim).
- ``reach``: a flagged line ran (``path``, ``line``).
- ``collective``: a torch.distributed call (``seq``, ``op``, ``dtypes``, ``site``); the parent
  compares ranks.
- ``scaler-update``: a GradScaler's update(): the scale before and after, whether the step was
  skipped for inf/NaN gradients, the user stack and the scale() line.
- ``stop`` / ``terminated`` / ``exit`` / ``start-error``: how the process ended.
"""

from __future__ import annotations

import json
import os
from typing import Any

CONFIG_ENV = "DTYPE_LINT_CONFIRM_CONFIG"
BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap")
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEVICES = ("auto", "cuda", "cpu")


def write_config(path: str, config: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(config, handle)


def read_config(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def read_evidence(directory: str) -> list[dict[str, Any]]:
    """Every record of every process, in file-name then line order; torn last lines are skipped."""
    records: list[dict[str, Any]] = []
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".jsonl"))
    except OSError:
        return records
    for name in names:
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue  # a write cut short by a kill
                    if isinstance(record, dict) and "kind" in record:
                        records.append(record)
        except OSError:
            continue
    return records

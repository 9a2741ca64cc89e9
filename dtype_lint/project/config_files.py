"""Configuration files a program names in its source (``deepspeed.initialize(config="ds.json")``).

Read by the project pass, which runs on every check (the summaries are cached, this is not):
editing the file changes the worlds, and so the re-check's cache key. A file that is missing,
unreadable or not JSON is no setting; nothing here raises.
"""

from __future__ import annotations

import json
import os

from dtype_lint.facts.precision_sources import DEEPSPEED_KEYS, deepspeed_setting
from dtype_lint.project.handoffs import setting_words

MAX_CONFIG_BYTES = 1 << 20


def _load(path: str):
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        return json.loads(data) if len(data) <= MAX_CONFIG_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None


def deepspeed_file_setting(source: str, named: str) -> tuple[str | None, str | None]:
    """(low dtype, words) of the DeepSpeed JSON file ``named`` in the file at ``source`` on disk
    (taken relative to the source's directory, as scripts run from there usually name it)."""
    if not named or os.path.isabs(named):
        return None, None
    path = os.path.normpath(os.path.join(os.path.dirname(source), named))
    key = deepspeed_setting(_load(path))
    if key is None:
        return None, None
    return DEEPSPEED_KEYS[key].params, f"{setting_words(key)} of `{named}`"

"""API rules that know context (issue 21): naming a deprecated class is not calling it, and a name
chosen by torch version (imports or aliases) is the compatibility idiom, not a deprecated call."""

from __future__ import annotations

import pytest

from dtype_lint.config import Settings
from dtype_lint.engine import check_text

SETTINGS = Settings(select=("DTL201",), target_torch="2.4")

NOT_A_DEPRECATED_CALL = {
    # accelerate's checkpointing.py: an annotation
    "annotation": "from torch.cuda.amp import GradScaler\ndef save(scaler: GradScaler = None) -> None:\n    pass\n",
    "annotated_attribute": "import torch\nscaler: 'torch.cuda.amp.GradScaler'\nother: torch.cuda.amp.GradScaler | None = None\n",
    # mmengine: a class test; the old class is a subclass of the new one, nothing is called
    "isinstance": "import torch\ndef check(s):\n    return isinstance(s, torch.cuda.amp.GradScaler)\n",
    "isinstance_tuple": "from torch.cuda.amp import GradScaler\ndef check(s, Other):\n    return isinstance(s, (Other, GradScaler))\n",
    "issubclass": "import torch\nok = issubclass(cls, torch.cuda.amp.GradScaler)\n",
    # a version-gated import: the name is torch.amp's on new torch
    "version_gated_import": (
        "import torch\nif TORCH_GE_2_4:\n    from torch.amp import GradScaler\nelse:\n"
        "    from torch.cuda.amp import GradScaler\nscaler = GradScaler('cuda')\n"
    ),
    "import_fallback": (
        "try:\n    from torch.amp import custom_fwd\nexcept ImportError:\n    from torch.cuda.amp import custom_fwd\n"
        "@custom_fwd(device_type='cuda')\ndef forward(ctx, x):\n    return x\n"
    ),
}


@pytest.mark.parametrize("name", sorted(NOT_A_DEPRECATED_CALL))
def test_not_a_deprecated_call(name):
    report = check_text(NOT_A_DEPRECATED_CALL[name], "train.py", SETTINGS)
    assert [(f.line, f.message) for f in report.findings] == []


def test_a_call_beside_a_names_only_use_is_still_reported():
    source = "import torch\ndef make(s: torch.cuda.amp.GradScaler = None):\n    return s or torch.cuda.amp.GradScaler()\n"
    report = check_text(source, "train.py", SETTINGS)
    assert [(f.code, f.line) for f in report.findings] == [("DTL201", 3)]

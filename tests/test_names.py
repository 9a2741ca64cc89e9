"""The import/alias table resolves what a dotted name really refers to."""

import libcst as cst
import pytest

from dtype_lint.facts.names import ImportTable


def resolve(source: str, expression: str) -> tuple[str, ...]:
    table = ImportTable.from_module(cst.parse_module(source))
    return table.qualified_names(cst.parse_expression(expression))


@pytest.mark.parametrize(
    "source,expression,expected",
    [
        ("import torch as T\n", "T.cuda.amp.GradScaler", "torch.cuda.amp.GradScaler"),
        ("from torch import nn\n", "nn.Linear", "torch.nn.Linear"),
        ("from torch.cuda import amp\n", "amp.autocast", "torch.cuda.amp.autocast"),
        ("from torch.cuda.amp import autocast as ac\n", "ac", "torch.cuda.amp.autocast"),
        ("import torch.nn.functional as F\n", "F.binary_cross_entropy", "torch.nn.functional.binary_cross_entropy"),
        ("import torch.cuda.amp\n", "torch.cuda.amp.autocast", "torch.cuda.amp.autocast"),
        ("import torch\nautocast = torch.autocast\n", "autocast", "torch.autocast"),
        ("def f():\n    import torch as tt\n    return tt\n", "tt.float16", "torch.float16"),
    ],
)
def test_aliases_resolve(source, expression, expected):
    assert resolve(source, expression) == (expected,)


def test_unimported_names_resolve_to_nothing():
    assert resolve("import torch\n", "model.half") == ()
    assert resolve("from . import amp\n", "amp.autocast") == ()


def test_fallback_binding_keeps_every_target_in_sorted_order():
    source = (
        "try:\n    from torch.amp import GradScaler\n"
        "except ImportError:\n    from torch.cuda.amp import GradScaler\n"
    )
    table = ImportTable.from_module(cst.parse_module(source))
    assert table.qualified_names(cst.parse_expression("GradScaler")) == (
        "torch.amp.GradScaler",
        "torch.cuda.amp.GradScaler",
    )
    assert len(table.fallback_imports) == 2


def test_local_spelling_respects_aliases():
    table = ImportTable.from_module(cst.parse_module("import torch as T\nfrom torch import amp\n"))
    assert table.local_names_for("torch") == ("T",)
    assert table.local_names_for("torch.amp.autocast")[0] == "amp.autocast"

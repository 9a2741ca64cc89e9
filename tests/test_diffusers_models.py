"""diffusers' model contract (dtype_lint.facts.diffusers_models) and DTL114, which queries it: what
a model loaded with ``torch_dtype`` runs in (its layers with weights) and what it keeps (its
non-persistent buffers), and the submodule results the project pass hands a model's forward."""

import ast
import textwrap

import libcst as cst

from dtype_lint import engine
from dtype_lint.config import Settings
from dtype_lint.context import FileContext
from dtype_lint.engine import check_text
from dtype_lint.facts import diffusers_models as dm
from dtype_lint.project.summary import summarize

HEAD = """
import torch
import torch.nn.functional as F
from torch import nn
from diffusers import ModelMixin
"""


def _ctx(source: str) -> FileContext:
    text = HEAD + textwrap.dedent(source)
    return FileContext("m.py", text, cst.parse_module(text))


def _codes(source: str) -> list[tuple[str, int]]:
    text = HEAD + textwrap.dedent(source)
    return sorted((f.code, f.line) for f in check_text(text, "m.py", Settings()).findings if f.code == "DTL114")


def test_model_class_through_file_bases_and_relative_import():
    ctx = _ctx("""
    class Base(ModelMixin):
        pass
    class Net(Base):
        pass
    class Plain(nn.Module):
        pass
    """)
    classes = dm.file_classes(ctx.module)
    assert dm.is_model_class(ctx, classes["Net"]) and not dm.is_model_class(ctx, classes["Plain"])
    text = "from ..modeling_utils import ModelMixin\nclass Net(ModelMixin):\n    pass\n"
    relative = FileContext("m.py", text, cst.parse_module(text))
    assert dm.is_model_class(relative, dm.file_classes(relative.module)["Net"])


def test_nonpersistent_buffers_and_keep_in_fp32():
    ctx = _ctx("""
    class Net(ModelMixin):
        _keep_in_fp32_modules = ["time_embed"]
        def __init__(self):
            super().__init__()
            self.register_buffer("a", torch.ones(3), persistent=False)
            self.register_buffer("b", torch.ones(3))
            self.register_buffer("c", torch.ones(3), False)
    """)
    cls = dm.file_classes(ctx.module)["Net"]
    assert sorted(dm.nonpersistent_buffers(cls)) == ["a", "c"]
    assert dm.keep_in_fp32(cls) == ("time_embed",)


def test_weighted_block_reads_its_forward_past_a_residual_alias():
    ctx = _ctx("""
    class Res(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 3)
        def forward(self, x):
            res = x
            x = self.conv(x)
            return x + res
    class Casting(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 3)
        def forward(self, x):
            return self.conv(x.to(self.conv.weight.dtype))
    """)
    assert dm.weighted_class(ctx, "Res") and not dm.weighted_class(ctx, "Casting")


def test_upcast_into_weights_needs_the_model_contract_and_an_uncast_value():
    body = """
    class Net({base}):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.gate = nn.Identity()
        def forward(self, x):
            a = self.proj(x.float())
            b = self.gate(x.float())
            return a, b
    """
    assert _codes(body.format(base="ModelMixin")) == [("DTL114", 13)]
    assert _codes(body.format(base="nn.Module")) == []  # no loading contract: its dtype is the caller's


def test_a_submodule_the_class_casts_itself_keeps_its_own_dtype():
    assert _codes("""
    class Net(ModelMixin):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
        def upcast(self):
            self.proj.to(torch.float32)
        def forward(self, x):
            return self.proj(x.float())
    """) == []


def test_autocast_region_and_inplace_add_are_silent():
    assert _codes("""
    class Net(ModelMixin):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.register_buffer("pe", torch.ones(1, 4).float(), persistent=False)
        def forward(self, x):
            with torch.autocast("cuda"):
                y = self.proj(x.float())
            x += self.pe
            return y, x
    """) == []


def test_summary_records_submodule_calls_as_forward_method_calls():
    text = textwrap.dedent("""
    from blocks import Proj
    class Net:
        def __init__(self):
            self.proj = Proj(3)
        def forward(self, t):
            return self.proj(t)
    """)
    calls = summarize(ast.parse(text), text)["method_calls"]
    assert {"name": "self.proj", "refs": ["Proj"], "method": "forward"} in calls


PROJ = """
import torch
from torch import nn
class FixedProj(nn.Module):
    def forward(self, t):
        return t[:, None].float() * torch.ones(4, dtype=torch.float32)
class MaybeProj(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
    def forward(self, t, up=False):
        if up:
            return t.float()
        return self.lin(t)
class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
    def forward(self, x):
        return self.lin(x)
"""

MODEL = """
from diffusers import ModelMixin
from blocks import FixedProj, MaybeProj, Mlp
class Net(ModelMixin):
    def __init__(self):
        super().__init__()
        self.fixed = FixedProj()
        self.maybe = MaybeProj()
        self.mlp = Mlp()
    def forward(self, t):
        a = self.mlp(self.fixed(t))
        b = self.mlp(self.maybe(t))
        return a, b
"""


def _project(tmp_path, files: dict) -> list:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    listed = [(name, str(tmp_path / name)) for name in sorted(files)]
    reports = engine.check_files(listed, Settings(), jobs=1, project=True)
    assert not [e for r in reports for e in r.internal_errors]
    return sorted((f.path, f.code, f.line) for r in reports for f in r.findings if f.code == "DTL114")


def test_only_a_forward_fixed_on_every_path_crosses_files(tmp_path):
    # ``self.maybe(t)`` is float32 only on one path of its forward: its caller learns nothing
    assert _project(tmp_path, {"blocks.py": PROJ, "net.py": MODEL}) == [("net.py", "DTL114", 11)]


def test_file_by_file_knows_no_other_file(tmp_path):
    for name, text in {"blocks.py": PROJ, "net.py": MODEL}.items():
        (tmp_path / name).write_text(text)
    listed = [(name, str(tmp_path / name)) for name in ("blocks.py", "net.py")]
    reports = engine.check_files(listed, Settings(), jobs=1, project=False)
    assert not [f for r in reports for f in r.findings if f.code == "DTL114"]


def test_the_submodule_is_the_one_built_under_the_same_config_setting():
    body = """
    class Net(ModelMixin):
        def __init__(self, kind=None):
            super().__init__()
            if kind == "linear":
                self.embed = nn.Linear(4, 4)
            elif kind == "identity":
                self.embed = nn.Identity()
        def forward(self, x, labels):
            if self.config.kind == "{setting}":
                labels = labels.float()
            return self.embed(labels)
    """
    assert _codes(body.format(setting="linear")) == [("DTL114", 17)]
    assert _codes(body.format(setting="identity")) == []  # float32 only reaches the Identity

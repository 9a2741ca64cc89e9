"""The contract of ``dtype-lint fix`` (issue 4), one test per promise.

DTL201 (deprecated ``torch.cuda.amp``) carries a real safe fix; where a promise needs a fix with
other properties (unsafe, overlapping, broken, never converging) a small rule is registered for
the one test and removed afterwards.
"""

from __future__ import annotations

import codecs
import os
import stat

import libcst as cst
import pytest

from dtype_lint.config import Settings
from dtype_lint.findings import Fix, Safety
from dtype_lint.fixer import FixOptions, fix_bytes, fix_file, fix_files, fix_text
from dtype_lint.rules import all_rules
from dtype_lint.rules.base import REGISTRY, Rule
from dtype_lint.rules.deprecated_api import DeprecatedAmpApi

# The project runs on torch >= 2.4, where every torch.amp replacement exists: the fixes are safe.
SETTINGS = Settings(target_torch="2.4")
ONLY_201 = Settings(select=("DTL201",), target_torch="2.4")

TRAIN = '''"""Fine-tune with mixed precision."""
import torch

scaler = torch.cuda.amp.GradScaler()  # loss scaling for fp16


def train_step(model, batch, optimizer):
    with torch.cuda.amp.autocast(dtype=torch.float16):
        loss = model(**batch).loss
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
'''
TRAIN_FIXED = TRAIN.replace("torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler("cuda")').replace(
    "torch.cuda.amp.autocast(dtype=", 'torch.amp.autocast("cuda", dtype='
)


@pytest.fixture
def extra_rule():
    """Register rules for one test only (the registry is global)."""
    all_rules()
    added: list[str] = []

    def register(rule_class: type[Rule]) -> type[Rule]:
        REGISTRY[rule_class.code] = rule_class
        added.append(rule_class.code)
        return rule_class

    yield register
    for code in added:
        REGISTRY.pop(code, None)


def _test_rule(register, code: str, name: str, make_fix, safety: Safety = Safety.SAFE) -> type[Rule]:
    """A rule that flags calls of ``name(...)`` and fixes them with ``make_fix(rule, node)``."""

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == name:
            self.report(node, f"call of {name}", fix=make_fix(self, node))

    attributes = {
        "__doc__": "A rule for one test.", "__module__": __name__, "code": code, "name": f"test-{code.lower()}",
        "summary": "test", "fix_safety": safety, "visit_Call": visit_Call,
    }
    return register(type(f"Test{code}", (Rule,), attributes))


def _rename(new_name: str, safety: Safety = Safety.SAFE):
    def make_fix(rule: Rule, node: cst.Call) -> Fix:
        return Fix(safety, (rule.replace(node.func, new_name),))

    return make_fix


# -- applying fixes --------------------------------------------------------------------------
def test_every_safe_fix_of_a_file_is_applied_and_nothing_else_changes():
    outcome = fix_text(TRAIN, "train.py", SETTINGS)
    assert outcome.text == TRAIN_FIXED
    assert [(f.code, f.line) for f in outcome.fixed] == [("DTL201", 4), ("DTL201", 8)]
    assert outcome.remaining == [] and outcome.failure is None


def test_second_fix_changes_nothing():
    once = fix_text(TRAIN, "train.py", SETTINGS)
    twice = fix_text(once.text, "train.py", SETTINGS)
    assert not twice.changed and twice.fixed == [] and twice.text == once.text


def test_unsafe_fixes_only_with_unsafe_fixes(extra_rule):
    _test_rule(extra_rule, "DTL998", "half_step", _rename("checked_step", Safety.UNSAFE))
    source = "import torch\nhalf_step(model)\n"
    safe_only = fix_text(source, "t.py", SETTINGS)
    assert not safe_only.changed and [f.code for f in safe_only.remaining] == ["DTL998"]
    unsafe = fix_text(source, "t.py", SETTINGS, unsafe=True)
    assert unsafe.text == "import torch\nchecked_step(model)\n" and unsafe.remaining == []


def test_overlapping_fixes_wait_for_the_next_round(extra_rule):
    def wrap_call(rule: Rule, node: cst.Call) -> Fix:
        inner = rule.ctx.code_for(node.args[0].value) if node.args else ""
        return Fix(Safety.SAFE, (rule.replace(node, f"guarded({inner})"),))

    _test_rule(extra_rule, "DTL998", "unguarded", wrap_call)
    source = "import torch\nunguarded(torch.cuda.amp.GradScaler())\nunguarded(unguarded(x))\n"
    outcome = fix_text(source, "t.py", SETTINGS)
    assert outcome.failure is None, outcome.failure
    assert outcome.text == 'import torch\nguarded(torch.amp.GradScaler("cuda"))\nguarded(guarded(x))\n'
    assert outcome.rounds == 2  # the DTL201 fix and the inner call overlapped the first round's fixes
    assert sorted(f.code for f in outcome.fixed) == ["DTL201", "DTL998", "DTL998", "DTL998"]


def test_rounds_are_bounded_and_a_file_that_never_settles_is_left_alone(extra_rule):
    _test_rule(extra_rule, "DTL998", "ping", _rename("pong"))
    _test_rule(extra_rule, "DTL997", "pong", _rename("ping"))
    outcome = fix_text("ping()\n", "t.py", SETTINGS)
    assert outcome.text == "ping()\n" and outcome.fixed == []
    assert "fixed point" in outcome.failure


# -- never break a file -----------------------------------------------------------------------
def _broken_autocast_fix(self, node, device, name):
    return Fix(Safety.SAFE, (self.replace(node.func, "torch.amp.autocast(("),))


def test_a_fix_that_breaks_parsing_leaves_the_file_untouched(tmp_path, monkeypatch):
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    before = os.stat(path)
    monkeypatch.setattr(DeprecatedAmpApi, "_call_fix", _broken_autocast_fix)
    result = fix_file(str(path), str(path), SETTINGS, FixOptions())
    assert "does not parse" in result.failure
    assert path.read_text() == TRAIN
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns and os.stat(path).st_ino == before.st_ino
    assert not result.changed and result.fixed == []
    assert [f.line for f in result.remaining] == [4, 8]  # what is left is the untouched file's findings
    assert sorted(os.listdir(tmp_path)) == ["train.py"]  # no temporary file left behind


def test_a_fix_that_does_not_remove_its_finding_leaves_the_file_untouched(monkeypatch):
    def same_text(self, node, device, name):
        return Fix(Safety.SAFE, (self.replace(node.func, self.ctx.code_for(node.func)),))

    monkeypatch.setattr(DeprecatedAmpApi, "_call_fix", same_text)
    outcome = fix_text(TRAIN, "train.py", SETTINGS)
    assert outcome.text == TRAIN and "did not remove the finding" in outcome.failure


def test_a_fix_creating_a_new_finding_of_its_code_at_the_site_fails(extra_rule):
    # ``legacy()`` -> ``legacy(legacy())``: the fixed call is gone, a new one appears inside it.
    def nest(rule: Rule, node: cst.Call) -> Fix:
        return Fix(Safety.SAFE, (rule.replace(node, "modern(legacy())"),))

    _test_rule(extra_rule, "DTL998", "legacy", nest)
    outcome = fix_text("legacy()\n", "t.py", SETTINGS)
    assert outcome.text == "legacy()\n" and "DTL998" in outcome.failure


def test_a_rule_crashing_on_the_fixed_code_leaves_the_file_untouched(extra_rule):
    def crash_on_fixed(rule: Rule, node: cst.Call) -> Fix:
        return Fix(Safety.SAFE, (rule.replace(node.func, "crash_me"),))

    _test_rule(extra_rule, "DTL998", "old_api", crash_on_fixed)
    crasher = _test_rule(extra_rule, "DTL997", "never_called", _rename("x"))

    def visit_Name(self, node):
        if node.value == "crash_me":
            raise RuntimeError("boom")

    crasher.visit_Name = visit_Name
    outcome = fix_text("old_api()\n", "t.py", SETTINGS)
    assert outcome.text == "old_api()\n" and "DTL997" in outcome.failure


def test_write_failure_leaves_the_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "train.py"
    path.write_text(TRAIN)

    def refuse(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    result = fix_file(str(path), str(path), SETTINGS, FixOptions())
    assert "No space left" in result.failure and not result.written
    assert path.read_text() == TRAIN
    assert sorted(os.listdir(tmp_path)) == ["train.py"]
    assert [f.line for f in result.remaining] == [4, 8]


# -- writing ---------------------------------------------------------------------------------
def test_write_is_atomic_and_keeps_permissions(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    os.chmod(path, 0o751)
    inode = os.stat(path).st_ino
    result = fix_file(str(path), str(path), SETTINGS, FixOptions())
    assert result.written
    assert path.read_text() == TRAIN_FIXED
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert os.stat(path).st_ino != inode  # a new file renamed over the old one, not rewritten in place
    assert sorted(os.listdir(tmp_path)) == ["train.py"]


def test_a_symlink_stays_a_symlink(tmp_path):
    target = tmp_path / "real.py"
    target.write_text(TRAIN)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    fix_file(str(link), str(link), SETTINGS, FixOptions())
    assert link.is_symlink() and target.read_text() == TRAIN_FIXED


def test_diff_mode_writes_nothing(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    result = fix_file(str(path), str(path), SETTINGS, FixOptions(write=False))
    assert path.read_text() == TRAIN and result.changed and not result.written
    assert '+scaler = torch.amp.GradScaler("cuda")  # loss scaling for fp16\n' in result.diff


# -- bytes outside the edits --------------------------------------------------------------------
@pytest.mark.parametrize("bom", [False, True], ids=["no-bom", "bom"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("final_newline", [True, False], ids=["final-newline", "no-final-newline"])
def test_bom_line_endings_and_final_newline_are_kept(bom, newline, final_newline):
    text, fixed = TRAIN, TRAIN_FIXED
    if not final_newline:
        text, fixed = text.rstrip("\n"), fixed.rstrip("\n")
    prefix = codecs.BOM_UTF8 if bom else b""
    data = prefix + text.replace("\n", newline).encode()
    result = fix_bytes(data, "train.py", SETTINGS, FixOptions())
    assert result.output == prefix + fixed.replace("\n", newline).encode()


def test_inserted_lines_follow_the_files_line_endings(extra_rule):
    def add_line(rule: Rule, node: cst.Call) -> Fix:
        statement = rule.ctx.enclosing_statement(node)
        # A rule that writes "\n" inside its content: a CRLF file must still get CRLF.
        return Fix(Safety.SAFE, (rule.replace(node.func, "done"), rule.insert_before_statement(statement, "a = 1\n    b = 2")))

    _test_rule(extra_rule, "DTL998", "todo", add_line)
    result = fix_bytes(b"if x:\r\n    todo()\r\n", "t.py", SETTINGS, FixOptions())
    assert result.output == b"if x:\r\n    a = 1\r\n    b = 2\r\n    done()\r\n"


def test_declared_encoding_is_kept():
    text = "# -*- coding: latin-1 -*-\n# Entraînement en précision mixte\n" + TRAIN
    result = fix_bytes(text.encode("latin-1"), "train.py", SETTINGS, FixOptions())
    assert result.output == ("# -*- coding: latin-1 -*-\n# Entraînement en précision mixte\n" + TRAIN_FIXED).encode("latin-1")


def test_undecodable_and_unparsable_files_are_reported_not_touched():
    bad_bytes = fix_bytes(b"x = '\xff'\n", "bad.py", SETTINGS, FixOptions())
    assert not bad_bytes.changed and [f.code for f in bad_bytes.remaining] == ["DTL001"]
    bad_syntax = fix_bytes(b"import torch\ntorch.cuda.amp.GradScaler(\n", "bad.py", SETTINGS, FixOptions())
    assert not bad_syntax.changed and [f.code for f in bad_syntax.remaining] == ["DTL001"]


# -- fallbacks and version checks (TorchFix rewrote an ``except ImportError:`` fallback) ---------
GUARDED = '''import torch
from packaging import version

try:
    from torch.amp import GradScaler
    scaler = GradScaler("cuda")
except ImportError:  # torch < 2.3
    scaler = torch.cuda.amp.GradScaler()

if version.parse(torch.__version__) >= version.parse("2.4"):
    autocast = torch.amp.autocast
else:
    ctx = torch.cuda.amp.autocast()

if hasattr(torch, "amp"):
    fwd = torch.amp.custom_fwd(device_type="cuda")
else:
    fwd = torch.cuda.amp.custom_fwd()

try:
    bf16_scaler = torch.amp.GradScaler("cuda", enabled=False)
except TypeError:  # torch < 2.3 takes no device
    bf16_scaler = torch.cuda.amp.GradScaler(enabled=False)

if hasattr(model, "module"):  # not a version check: fixed
    model_scaler = torch.cuda.amp.GradScaler()
'''


def test_fixes_in_fallback_and_version_check_branches_are_skipped():
    outcome = fix_text(GUARDED, "compat.py", SETTINGS, unsafe=True)
    assert outcome.failure is None
    assert outcome.text == GUARDED.replace(
        "model_scaler = torch.cuda.amp.GradScaler()", 'model_scaler = torch.amp.GradScaler("cuda")'
    )
    # Lines 13, 18 and 23 are old-torch fallbacks DTL201 no longer reports (issue 14); line 8's try
    # imports torch.amp without using `amp.`, so the fixer's own guard is what keeps it.
    assert [(s.finding.line, s.reason) for s in outcome.skipped] == [
        (8, "inside a try/except compatibility fallback"),
    ]
    assert [f.line for f in outcome.remaining] == [8]


# -- imports a fix needs ------------------------------------------------------------------------
def _needs_torch(rule: Rule, node: cst.Call) -> Fix | None:
    """``halve(x)`` -> ``x.to(<torch>.float16)``, importing torch if the file does not."""
    reference = rule.module_for_fix("torch")
    if reference is None:
        return None
    torch, import_edits = reference
    argument = rule.ctx.code_for(node.args[0].value)
    return Fix(Safety.SAFE, (rule.replace(node, f"{argument}.to({torch}.float16)"), *import_edits))


@pytest.mark.parametrize(
    "source,expected",
    [
        pytest.param(
            "import torch as T\nh = halve(x)\n", "import torch as T\nh = x.to(T.float16)\n", id="alias-respected"
        ),
        pytest.param(
            '"""Doc."""\nfrom __future__ import annotations\n\nimport os\n\ny = halve(a) + halve(b)\n',
            '"""Doc."""\nfrom __future__ import annotations\n\nimport torch\nimport os\n\ny = a.to(torch.float16) + b.to(torch.float16)\n',
            id="added-once-after-docstring-and-future",
        ),
        pytest.param(
            "def f(x):\n    return halve(x)\n",
            "import torch\ndef f(x):\n    return x.to(torch.float16)\n",
            id="added-at-top-not-in-function",
        ),
        pytest.param(
            "try:\n    import torch\nexcept ImportError:\n    torch = None\nh = halve(x)\n",
            "try:\n    import torch\nexcept ImportError:\n    torch = None\nh = halve(x)\n",
            id="never-beside-a-fallback-import",
        ),
    ],
)
def test_imports_a_fix_needs(extra_rule, source, expected):
    _test_rule(extra_rule, "DTL998", "halve", _needs_torch)
    outcome = fix_text(source, "t.py", SETTINGS)
    assert outcome.failure is None
    assert outcome.text == expected
    assert fix_text(outcome.text, "t.py", SETTINGS).text == expected


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_line_added_after_the_last_line_of_a_file_without_final_newline(extra_rule, newline):
    def step_then_update(rule: Rule, node: cst.Call) -> Fix:
        statement = rule.ctx.enclosing_statement(node)
        return Fix(Safety.SAFE, (rule.replace(node.func, "scaled_step"), rule.insert_after_statement(statement, "update()")))

    _test_rule(extra_rule, "DTL998", "raw_step", step_then_update)
    source = "for x in loader:\n    raw_step(x)".replace("\n", newline)
    outcome = fix_text(source, "t.py", SETTINGS)
    assert outcome.text == "for x in loader:\n    scaled_step(x)\n    update()".replace("\n", newline)


def test_a_file_changed_while_being_fixed_is_not_overwritten(tmp_path, monkeypatch):
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    edited = TRAIN + "# saved by an editor meanwhile\n"
    real_fix_text = fix_text

    def fix_while_an_editor_saves(*args, **kwargs):
        outcome = real_fix_text(*args, **kwargs)
        path.write_text(edited)
        return outcome

    monkeypatch.setattr("dtype_lint.fixer.files.fix_text", fix_while_an_editor_saves)
    result = fix_file(str(path), str(path), SETTINGS, FixOptions())
    assert "changed while it was being fixed" in result.failure and not result.written
    assert path.read_text() == edited
    assert sorted(os.listdir(tmp_path)) == ["train.py"]


def test_files_are_fixed_in_worker_processes(extra_rule, tmp_path):
    # The rule writes the id of the process that checked the file into its message.
    def no_fix(rule: Rule, node: cst.Call) -> None:
        return None

    rule = _test_rule(extra_rule, "DTL998", "where_am_i", no_fix)
    original_report = rule.report
    rule.report = lambda self, node, message, **kw: original_report(self, node, f"pid {os.getpid()}", **kw)
    files = []
    for index in range(10):
        path = tmp_path / f"train_{index}.py"
        path.write_text(TRAIN + "where_am_i()\n")
        files.append((str(path), str(path)))
    results = fix_files(files, SETTINGS, FixOptions(), jobs=2)
    assert all(path.read_text() == TRAIN_FIXED + "where_am_i()\n" for path in tmp_path.iterdir())
    pids = {finding.message for result in results for finding in result.remaining}
    assert len(results) == 10 and f"pid {os.getpid()}" not in pids and pids

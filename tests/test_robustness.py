"""No input makes the checker fail: generated programs, damaged real files, odd encodings.

The contract: ``check`` never raises and never reports an internal error for anything a file
contains; a file Python cannot compile gets DTL001; the process exits 0 or 1, never 2, never a
traceback. A rule that does break is reported with its code and the file, and nothing else stops.
"""

import ast
import codecs
import json
import random
import subprocess
import sys
import textwrap
import warnings

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import FIXTURES, ROOT, run_cli
from dtype_lint.config import Settings
from dtype_lint.engine import PARSE_ERROR, check_bytes, check_files, check_text
from dtype_lint.findings import Confidence

CORPUS_SAMPLE = ROOT / "tests" / "data" / "corpus_sample"
SEEDS = sorted(FIXTURES.rglob("*.py"))[:12] + sorted(CORPUS_SAMPLE.glob("*.py"))[:6]
# Generated and mutated programs are full of things CPython warns about ("'int' is not callable").
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")
BOUNDED = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


def python_refuses(data: bytes) -> bool:
    """Would CPython refuse to parse this file?"""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


def check_all_ways(data: bytes, name: str = "mutant.py"):
    """Check with and without the prefilter; both must be clean of internal errors."""
    reports = [check_bytes(data, name, Settings(), prefilter=prefilter) for prefilter in (True, False)]
    for report in reports:
        assert not report.internal_errors, report.internal_errors
        for finding in report.findings:
            assert finding.line >= 1 and finding.column >= 1
    return reports


def assert_contract(data: bytes, name: str = "mutant.py") -> None:
    reports = check_all_ways(data, name)
    if b"\0" in data or python_refuses(data):
        for report in reports:
            assert PARSE_ERROR in {f.code for f in report.findings}, (name, data[:200])


# -- generated programs --------------------------------------------------------------------------
@BOUNDED
@given(hypothesmith.from_grammar())
def test_generated_programs_from_the_grammar(source):
    assert_contract(source.encode("utf-8", "surrogatepass"))


@BOUNDED
@given(hypothesmith.from_node())
def test_generated_syntax_trees(source):
    assert_contract(source.encode("utf-8", "surrogatepass"))


# -- mutations of real files ---------------------------------------------------------------------
@BOUNDED
@given(st.sampled_from(SEEDS), st.floats(0, 1))
def test_truncated_files(path, fraction):
    data = path.read_bytes()
    assert_contract(data[: int(len(data) * fraction)], path.name)


@BOUNDED
@given(st.sampled_from(SEEDS), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_random_byte_flips(path, flips):
    data = bytearray(path.read_bytes())
    for where, value in flips:
        data[min(int(where * len(data)), len(data) - 1)] = value
    assert_contract(bytes(data), path.name)


@BOUNDED
@given(
    st.sampled_from(SEEDS),
    st.floats(0, 1),
    st.sampled_from(["\0", "\t", "\r", "\x0c", "\ufeff", "\u2028", "\\", "'''", "(", "])"]),
)
def test_odd_characters_inserted(path, where, inserted):
    text = path.read_text(encoding="utf-8")
    at = int(where * len(text))
    assert_contract((text[:at] + inserted + text[at:]).encode("utf-8"), path.name)


@pytest.mark.parametrize("path", SEEDS, ids=[p.name for p in SEEDS])
def test_line_endings_indentation_and_encodings(path):
    text = path.read_text(encoding="utf-8")
    variants = {
        "crlf": text.replace("\n", "\r\n").encode(),
        "cr-only": text.replace("\n", "\r").encode(),
        "tabs": text.replace("    ", "\t").encode(),
        "mixed-tabs": text.replace("        ", "\t    ").encode(),
        "bom": codecs.BOM_UTF8 + text.encode(),
        "utf16-undeclared": text.encode("utf-16"),
        "latin1-declared": ("# -*- coding: latin-1 -*-\n" + text).encode("latin-1", "replace"),
        "bad-declaration": ("# -*- coding: klingon -*-\n" + text).encode(),
        "no-final-newline": text.rstrip("\n").encode(),
        "nul-early": b"\0" + text.encode(),
        "nul-late": text.encode() + b"\nx = '\0'\n",
    }
    for name, data in variants.items():
        assert_contract(data, f"{name}-{path.name}")


def test_findings_survive_crlf_tabs_and_a_bom():
    source = "import torch\nif True:\n    scaler = torch.cuda.amp.GradScaler()\n"
    expected = [(f.code, f.line) for f in check_text(source, "a.py", Settings()).findings]
    assert ("DTL201", 3) in expected
    for data in (
        source.replace("\n", "\r\n").encode(),
        source.replace("    ", "\t").encode(),
        codecs.BOM_UTF8 + source.encode(),
        ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + source).encode("latin-1"),
    ):
        report = check_bytes(data, "a.py", Settings())
        shift = 2 if data.startswith(b"# -*- coding") else 0
        assert [(code, line + shift) for code, line in expected] == [(f.code, f.line) for f in report.findings]


DEEP = {
    "2000 nested parentheses": "x = " + "(" * 2000 + "1" + ")" * 2000 + "\n",
    "2000 nested lists": "x = " + "[" * 2000 + "]" * 2000 + "\n",
    "150 nested parentheses": "x = " + "(" * 150 + "torch.float16" + ")" * 150 + "\n",
    "5000-term sum": "x = " + " + ".join(["a"] * 5000) + "\n",
    "1000-term sum over lines": "x = (\n" + " +\n".join(["torch.float16"] * 1000) + "\n)\n",
    "3000 chained conditionals": "x = " + "a if b else " * 3000 + "c\n",
    "3000 implicit string parts": "x = " + " ".join(["'a'"] * 3000) + "\n",
    "2000 unary minus": "x = " + "-" * 2000 + "1\n",
    # one node in CPython's tree, 100,000 nested ones in libcst's (its native parser segfaulted)
    "100000-term and": "x = a" + " and a" * 100_000 + "\n",
    "20000-term or of ands": "x = " + " or ".join(["a and b"] * 20_000) + "\n",
    "1000 nested lambdas": "f = " + "lambda: " * 1000 + "1\n",
    "99 nested blocks": "".join(" " * i + "if x:\n" for i in range(99)) + " " * 99 + "pass\n",
    "200 nested blocks": "".join(" " * i + "if x:\n" for i in range(200)) + " " * 200 + "pass\n",
    "huge integer": "x = " + "9" * 100_000 + "\n",
    "huge float": "eps = 1e" + "9" * 5000 + "\n",
    "huge string": "s = '" + "a" * 2_000_000 + "'\n",
    "many lines": "x = torch.float16\n" * 20_000,
    "10k-argument call": "f(" + ", ".join(["torch.float16"] * 10_000) + ")\n",
    "long attribute chain": "x = torch" + ".a" * 3000 + "\n",
    "long call chain": "x = model" + ".half()" * 2000 + "\n",
}


def _deep_file_name(name: str) -> str:
    return name.replace(" ", "_") + ".py"


@pytest.fixture(scope="module")
def deep_run(tmp_path_factory):
    """Every shape as its own file, checked by one run of the real CLI (one start-up, not one per
    shape): deep nesting can overflow libcst's native parser (a segfault), so it runs as users do,
    in a process of its own. Each test below asserts on its own file's findings."""
    folder = tmp_path_factory.mktemp("deep")
    for name, body in DEEP.items():
        (folder / _deep_file_name(name)).write_text("import torch\n" + body + "scaler = torch.cuda.amp.GradScaler()\n")
    result = run_cli("check", "--format", "json", "--no-cache", ".", cwd=folder)
    return folder, result


@pytest.mark.parametrize("name", sorted(DEEP))
def test_pathological_shapes_in_a_subprocess(name, deep_run):
    folder, result = deep_run
    path = folder / _deep_file_name(name)
    assert result.returncode in (0, 1), (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    codes = {item["code"] for item in json.loads(result.stdout) if item["path"] == path.name}
    if python_refuses(path.read_bytes()):
        assert PARSE_ERROR in codes
    else:  # either checked (the deprecated API below is found) or declared uncheckable
        assert "DTL201" in codes or PARSE_ERROR in codes


def test_mutants_through_the_cli_exit_0_or_1(tmp_path):
    """A directory of damaged files, checked in parallel by the real CLI: no traceback, no exit 2."""
    rng = random.Random(7)
    for index, path in enumerate(SEEDS):
        data = bytearray(path.read_bytes())
        for _ in range(3):
            data[rng.randrange(len(data))] = rng.randrange(256)
        (tmp_path / f"flip{index}.py").write_bytes(bytes(data))
        (tmp_path / f"cut{index}.py").write_bytes(path.read_bytes()[: rng.randrange(len(data))])
    (tmp_path / "binary.py").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "utf16.py").write_bytes("import torch\nx = 1\n".encode("utf-16"))
    for jobs in ("1", "2"):
        result = run_cli("check", "--format", "json", "--no-cache", "--jobs", jobs, ".", cwd=tmp_path)
        assert result.returncode in (0, 1), result.stderr[-3000:]
        assert result.stderr == ""
        by_path = {}
        for item in json.loads(result.stdout):
            by_path.setdefault(item["path"], set()).add(item["code"])
        assert PARSE_ERROR in by_path["binary.py"] and PARSE_ERROR in by_path["utf16.py"]
        for path in tmp_path.glob("*.py"):
            if python_refuses(path.read_bytes()) or b"\0" in path.read_bytes():
                assert PARSE_ERROR in by_path.get(path.name, set()), path.name


# -- the corpus sample: real code nobody here wrote -------------------------------------------
def test_corpus_sample_has_no_internal_errors_with_every_rule_at_low_confidence():
    files = [(str(p), str(p)) for p in sorted(CORPUS_SAMPLE.glob("*.py"))]
    assert len(files) >= 15
    low = Settings(min_confidence=Confidence.LOW)
    for prefilter in (True, False):
        reports = check_files(files, low, jobs=1, prefilter=prefilter)
        errors = [error for report in reports for error in report.internal_errors]
        assert errors == []
        assert not [f for r in reports for f in r.findings if f.code == PARSE_ERROR]


def test_corpus_sample_through_the_cli():
    result = run_cli("check", "--format", "json", "--no-cache", "--exit-zero", str(CORPUS_SAMPLE))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    json.loads(result.stdout)


# -- a broken rule ----------------------------------------------------------------------------
BROKEN_RULE = textwrap.dedent(
    '''
    import sys
    import libcst as cst
    from dtype_lint.rules import all_rules
    from dtype_lint.rules.base import Rule

    all_rules()  # register the real rules first

    class Broken(Rule):
        """A rule that fails on one file."""
        code = "DTL999"
        name = "broken-on-purpose"
        triggers = ("torch",)  # a code word of every file here

        def visit_Call(self, node: cst.Call) -> None:
            if self.ctx.path.endswith("victim.py"):
                raise KeyError("boom")

    from dtype_lint.cli import main
    sys.exit(main(sys.argv[1:]))
    '''
)
DEFECT = "import torch\nscaler = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast():\n    pass\n"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_internal_error_in_one_rule_is_reported_and_the_rest_still_runs(tmp_path, jobs):
    (tmp_path / "victim.py").write_text(DEFECT)
    for index in range(9):  # enough files for the process pool
        (tmp_path / f"other{index}.py").write_text(DEFECT)
    script = tmp_path / "with_broken_rule.py"
    script.write_text(BROKEN_RULE)
    result = subprocess.run(
        [sys.executable, str(script), "check", "--format", "json", "--no-cache", "--jobs", jobs, "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "internal error" in line]
    assert len(errors) == 1, result.stderr
    assert "victim.py" in errors[0] and "DTL999" in errors[0] and "KeyError" in errors[0]
    findings = json.loads(result.stdout)
    paths_with_dtl201 = {item["path"] for item in findings if item["code"] == "DTL201"}
    assert paths_with_dtl201 == {"victim.py", *(f"other{i}.py" for i in range(9))}
    assert not [item for item in findings if item["code"] == "DTL999"]


DYING_RULE = BROKEN_RULE.replace('raise KeyError("boom")', "os.kill(os.getpid(), signal.SIGSEGV)").replace(
    "import sys\n", "import os\nimport signal\nimport sys\n")


def test_a_worker_that_dies_costs_its_file_only(tmp_path):
    """A worker killed by a signal (a native parser overflowing its stack): its file gets an internal
    error naming the signal, the run exits 2 without a traceback, and every other file is checked."""
    (tmp_path / "victim.py").write_text(DEFECT)
    for index in range(30):
        (tmp_path / f"other{index}.py").write_text(DEFECT)
    script = tmp_path / "with_dying_rule.py"
    script.write_text(DYING_RULE)
    result = subprocess.run(
        [sys.executable, str(script), "check", "--format", "json", "--no-cache", "--jobs", "2", "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        "dtype-lint: error: victim.py: internal error: the worker checking it was killed by SIGSEGV"
    ]
    paths_with_dtl201 = {item["path"] for item in json.loads(result.stdout) if item["code"] == "DTL201"}
    assert paths_with_dtl201 == {f"other{i}.py" for i in range(30)}


def test_internal_error_in_process(monkeypatch):
    from dtype_lint.rules import all_rules
    from dtype_lint.rules.base import REGISTRY, Rule

    all_rules()
    try:
        class Exploding(Rule):
            """Fails on every call."""

            code = "DTL998"
            name = "exploding"
            triggers = ("torch",)

            def visit_Call(self, node):
                raise RuntimeError("kaboom")

        report = check_text(DEFECT, "x.py", Settings())
    finally:
        REGISTRY.pop("DTL998", None)
    assert len(report.internal_errors) == 1
    assert "x.py" in report.internal_errors[0] and "DTL998" in report.internal_errors[0]
    assert "kaboom" in report.internal_errors[0]
    assert "DTL201" in {f.code for f in report.findings}


# -- shapes of real training scripts that broke a rule ------------------------------------------
def test_autocast_through_a_partial_on_a_device_not_known():
    """timm's train.py: ``partial(torch.autocast, device_type=device.type, dtype=torch.bfloat16)``.
    The dtype is explicit, the device is not known: no internal error, no guess of a device."""
    source = textwrap.dedent(
        """\
        import torch
        import torch.nn.functional as F
        from functools import partial

        def train(device, model, optimizer, x, y):
            amp_autocast = partial(torch.autocast, device_type=device.type, dtype=torch.bfloat16)
            with amp_autocast():
                logits = model(x)
                with amp_autocast():
                    hidden = model(logits)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            optimizer.step()
        """
    )
    report = check_text(source, "train.py", Settings(min_confidence=Confidence.LOW))
    assert report.internal_errors == []
    by_code = {f.code: f for f in report.findings}
    assert "bfloat16 (`dtype=torch.bfloat16`)" in by_code["DTL205"].message
    assert not any(device in f.message for f in report.findings for device in ("CUDA", "CPU"))


class _TooManyEvaluations(Exception):
    pass


def test_calling_a_call_result_is_evaluated_once_per_call(monkeypatch):
    """``torch.zeros(1).half()()()...``: each ``()`` once evaluated its callee twice, so forty of them
    took 2**40 steps. The flow's expression evaluations are counted and stopped at a linear bound."""
    from dtype_lint.facts.flow.interpreter import Interpreter

    evaluations = 0
    evaluate = Interpreter.ev

    def counted(self, *args, **kwargs):
        nonlocal evaluations
        evaluations += 1
        if evaluations > 5_000:
            raise _TooManyEvaluations
        return evaluate(self, *args, **kwargs)

    monkeypatch.setattr(Interpreter, "ev", counted)
    source = "import torch\nx = torch.zeros(1).half()" + "()" * 40 + "\ny = x.float()\n"
    report = check_text(source, "calls.py", Settings())
    assert report.internal_errors == []
    assert 0 < evaluations < 200


def test_an_uncaught_exception_exits_2_in_one_line(tmp_path):
    """Exit 1 means findings: a bug of ours that escapes every file's guard exits 2, in one line
    that says where it was raised."""
    (tmp_path / "a.py").write_text(DEFECT)
    script = tmp_path / "with_broken_report.py"
    script.write_text(textwrap.dedent(
        """\
        import sys
        import dtype_lint.report

        def render(*args, **kwargs):
            raise RuntimeError("the report\\nbroke")

        dtype_lint.report.render = render
        from dtype_lint.cli import main
        sys.exit(main(sys.argv[1:]))
        """
    ))
    result = subprocess.run([sys.executable, str(script), "check", "--no-cache", "a.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("dtype-lint: internal error: RuntimeError: the report broke (")
    assert "with_broken_report.py:5)" in result.stderr


def test_a_notebook_with_a_number_longer_than_int_takes():
    """A 100,001-digit integer in a notebook's metadata and a cell's: CPython's ``int()`` refuses
    more than 4,300 digits. Nothing reads those numbers; the cells are checked and fixed."""
    from dtype_lint.fixer import FixOptions, fix_bytes

    huge = "1" * 100_001
    notebook = (
        '{"cells": [{"cell_type": "code", "execution_count": ' + huge + ', "metadata": {"n": -' + huge + '},'
        ' "outputs": [], "source": ["import torch\\n", "scaler = torch.cuda.amp.GradScaler()\\n"]}],'
        ' "metadata": {"seed": ' + huge + ', "kernelspec": {"language": "python"}},'
        ' "nbformat": 4, "nbformat_minor": 5}'
    ).encode()
    report = check_bytes(notebook, "big.ipynb", Settings())
    assert report.internal_errors == []
    assert [(f.code, f.cell, f.line) for f in report.findings] == [("DTL201", 1, 2)]
    result = fix_bytes(notebook, "big.ipynb", Settings(target_torch="2.4"), FixOptions(write=False))
    assert result.internal_errors == [] and result.failure is None
    assert result.output == notebook.replace(b"torch.cuda.amp.GradScaler()", b'torch.amp.GradScaler(\\"cuda\\")')


@pytest.mark.parametrize("content", ['{"version": ' + "1" * 5000 + "}", "[" * 100_000 + "]" * 100_000])
def test_a_baseline_with_a_huge_number_or_deep_nesting_is_a_usage_error(tmp_path, content):
    (tmp_path / "a.py").write_text(DEFECT)
    (tmp_path / "baseline.json").write_text(content)
    result = run_cli("check", "--no-cache", "--baseline", "baseline.json", "a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("dtype-lint: error: baseline.json: not a dtype-lint baseline (invalid JSON")
    assert len(result.stderr.splitlines()) == 1, result.stderr


# -- configuration that is not what it should be ------------------------------------------------
BAD_PYPROJECTS = {
    "tool is a string": (b'tool = "dtype-lint"\n', "'tool' must be a table"),
    "tool is a list": (b'tool = ["dtype-lint", 1]\n', "'tool' must be a table"),
    "tool is a number": (b"tool = 5\n", "'tool' must be a table"),
    "our table is a number": (b"[tool]\ndtype-lint = 5\n", "[tool.dtype-lint] must be a table"),
    "a Latin-1 byte": (b'[tool.dtype-lint]\nselect = ["DTL2"]  # caf\xe9\n', "invalid TOML: not UTF-8"),
    "100k-deep arrays": (b"# dtype-lint\nx = " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "nested too deeply"),
    "50k-deep inline tables": (b"# dtype-lint\nx = " + b"{a = " * 50_000 + b"1" + b"}" * 50_000 + b"\n",
                               "nested too deeply"),
}


@pytest.mark.parametrize("name", sorted(BAD_PYPROJECTS))
def test_a_pyproject_that_cannot_be_our_config_is_a_one_line_error(tmp_path, name):
    from dtype_lint.config import load_settings
    from dtype_lint.errors import UsageError

    content, expected = BAD_PYPROJECTS[name]
    (tmp_path / "pyproject.toml").write_bytes(content)
    for config in (None, str(tmp_path / "pyproject.toml")):  # found by discovery, or named by --config
        with pytest.raises(UsageError) as raised:
            load_settings(str(tmp_path), config)
        message = str(raised.value)
        assert expected in message and str(tmp_path / "pyproject.toml") in message and "\n" not in message


def test_a_bad_pyproject_exits_2_through_the_cli(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(BAD_PYPROJECTS["tool is a list"][0])
    (tmp_path / "sub").mkdir()  # a nested config is found by the per-directory resolver
    (tmp_path / "sub" / "pyproject.toml").write_bytes(BAD_PYPROJECTS["a Latin-1 byte"][0])
    (tmp_path / "sub" / "a.py").write_text(DEFECT)
    for args, where in ((["a.py"], "sub"), (["sub"], ".")):
        result = run_cli("check", "--no-cache", *args, cwd=tmp_path / where)
        assert result.returncode == 2
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.startswith("dtype-lint: error: "), result.stderr


# -- big files: memory and a parse in slices ----------------------------------------------------
TRICKY_SLICES = (
    "# header comment\n\nimport torch\r\nx = 1\r\n",  # CRLF first, then LF: the file's newline is CRLF
    "def f():\n  return 1\n  # block footer\n# dedented comment\n\nclass A:\n    def g(self):\n        pass\n",
    "a = 1; b = 2\n@decorator\n\n@other(1)\ndef h(): pass\nif a:\n    pass\nelse:\n    pass\n# end",
    "x = [\n    1,\n]\n\n\n# trailing\n\n",
    "'''docstring'''\nfrom m import *\ntry:\n\tpass\nexcept E:\n\tpass\n",
)


@pytest.mark.parametrize("source", [*TRICKY_SLICES, *(p.read_text() for p in sorted(CORPUS_SAMPLE.glob("*.py"))[:8])])
def test_a_file_parsed_in_slices_is_the_file_parsed_whole(source):
    """Every top-level statement its own slice: the joined tree equals libcst's single parse, and
    the cheap positions equal libcst's PositionProvider's for every node."""
    import libcst as cst
    from libcst.metadata import PositionProvider

    from dtype_lint.parsing import parse_in_slices, statement_starts
    from dtype_lint.positions import Positions

    whole = cst.parse_module(source)
    joined, skipped = parse_in_slices(source, statement_starts(ast.parse(source)), slice_size=1)
    assert skipped == []
    assert joined.code == source and joined.deep_equals(whole)
    assert (joined.default_indent, joined.default_newline, joined.has_trailing_newline) == (
        whole.default_indent, whole.default_newline, whole.has_trailing_newline)
    provider = PositionProvider()
    provider._gen_impl(whole)
    positions = Positions(whole, source)
    assert all(positions[node] == expected for node, expected in provider._computed.items())


PEAK_RSS = textwrap.dedent(
    """\
    import json, sys
    from dtype_lint.config import Settings
    from dtype_lint.engine import check_file
    report = check_file(sys.argv[1], sys.argv[1], Settings(), summarize=True)
    status = open("/proc/self/status").read()
    peak = int(status.split("VmHWM:")[1].split()[0]) / 1024
    print(json.dumps({"peak_mib": peak, "findings": [(f.code, f.line) for f in report.findings],
                      "errors": report.internal_errors}))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_big_file_is_checked_in_bounded_memory(tmp_path):
    """600 KB: 300 KB of short statements (libcst's parser held ~700 bytes per byte of them) and a
    300 KB data table (one statement). Checked, the table reported as skipped, well under the
    ~500 MB the whole-file parse peaked at."""
    lines = ["import torch", "scaler = torch.cuda.amp.GradScaler()"]
    lines += [f"x{i} = torch.float16" for i in range(15_000)]
    lines += ["TABLE = {"] + [f"    'k{i}': [{i}, {i + 1}, 'v']," for i in range(11_000)] + ["}"]
    lines += ["late = torch.cuda.amp.GradScaler()", ""]
    path = tmp_path / "big.py"
    path.write_text("\n".join(lines))
    result = subprocess.run([sys.executable, "-c", PEAK_RSS, str(path)], capture_output=True, text=True, timeout=300)
    measured = json.loads(result.stdout)
    assert measured["errors"] == []
    table_line = lines.index("TABLE = {") + 1
    assert measured["findings"] == [["DTL201", 2], ["DTL001", table_line], ["DTL201", len(lines) - 1]]
    assert measured["peak_mib"] < 200, measured["peak_mib"]

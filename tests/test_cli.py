"""The `dtype-lint check` and `dtype-lint rule` commands, end to end through a real subprocess."""

import json
import os
import subprocess
import sys
import textwrap

from conftest import ROOT, run_cli

DEFECT = textwrap.dedent(
    """\
    import torch

    scaler = torch.cuda.amp.GradScaler()
    """
)
CLEAN = "import torch\n\nscaler = torch.amp.GradScaler('cuda')\n"


def write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_findings_print_like_ruff_and_exit_1(tmp_path):
    write(tmp_path, "train.py", DEFECT)
    write(tmp_path, "requirements.txt", "torch>=2.4\n")  # the replacement exists: a safe fix [*]
    result = run_cli("check", "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("train.py:3:10: DTL201 [*] ")
    assert "3 | scaler = torch.cuda.amp.GradScaler()" in result.stdout
    assert "Found 1 error." in result.stdout
    assert "1 fixable with `dtype-lint fix`" in result.stdout


def test_clean_file_exits_0(tmp_path):
    write(tmp_path, "train.py", CLEAN)
    result = run_cli("check", str(tmp_path))
    assert result.returncode == 0
    assert "All checks passed!" in result.stdout


def test_missing_path_is_a_dtl001_finding_and_the_others_are_checked(tmp_path):
    # ruff and flake8 report a path that cannot be read as E902 and go on: DTL001 here, exit 1.
    write(tmp_path, "train.py", DEFECT)
    result = run_cli("check", "--format", "concise", "--target-torch", "2.4", "nope.py", "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[:2] == [
        "nope.py:1:1: DTL001 Cannot check this file: cannot read: No such file or directory",
        "train.py:3:10: DTL201 [*] `torch.cuda.amp.GradScaler` is deprecated; use `torch.amp.GradScaler(\"cuda\", ...)`",
    ]
    assert result.stderr == ""
    # DTL001 ignored: a one-line warning instead, and the exit status is the other files'.
    ignored = run_cli("check", "--ignore", "DTL001", "nosuchdir", "train.py", cwd=tmp_path)
    assert ignored.returncode == 1 and "train.py:3:10: DTL201" in ignored.stdout
    assert ignored.stderr == "dtype-lint: warning: nosuchdir: cannot read: No such file or directory\n"
    alone = run_cli("check", "--ignore", "DTL001", "nosuchdir", cwd=tmp_path)
    assert alone.returncode == 0 and "Traceback" not in alone.stderr


def test_bad_option_is_usage_error(tmp_path):
    result = run_cli("check", "--select", "E501", str(tmp_path))
    assert result.returncode == 2
    assert "invalid rule selector" in result.stderr and "Traceback" not in result.stderr


def test_broken_files_get_dtl001_and_others_are_still_checked(tmp_path):
    write(tmp_path, "a_broken.py", "import torch\ndef train(:\n    pass\n")
    write(tmp_path, "b_binary.py", b"\x00\x01\x02torch.cuda.amp", mode="wb")
    write(tmp_path, "c_latin.py", "x = 'caf\xe9'\n".encode("latin-1"), mode="wb")
    write(tmp_path, "d_defect.py", DEFECT)
    result = run_cli("check", "--format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    by_path = {(f["path"], f["code"]) for f in findings}
    assert ("a_broken.py", "DTL001") in by_path  # "./" is dropped, as ruff does
    codes = sorted(f["code"] for f in findings)
    assert codes == ["DTL001", "DTL001", "DTL001", "DTL201"]
    broken = next(f for f in findings if "a_broken" in f["path"])
    assert broken["line"] == 2 and "syntax error" in broken["message"]
    latin = next(f for f in findings if "c_latin" in f["path"])
    assert "UTF-8" in latin["message"]
    assert "Traceback" not in result.stderr


def test_json_has_exactly_the_documented_keys_and_paths_as_given(tmp_path):
    write(tmp_path, "pkg/train.py", DEFECT)
    write(tmp_path, "requirements.txt", "torch>=2.4\n")  # the replacement exists: a safe fix
    result = run_cli("check", "--format", "json", "pkg", cwd=tmp_path)
    findings = json.loads(result.stdout)
    assert len(findings) == 1
    finding = findings[0]
    assert set(finding) == {
        "path", "line", "column", "end_line", "end_column", "code", "name", "message", "confidence", "fix",
    }
    assert finding["path"] == os.path.join("pkg", "train.py")
    assert (finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (3, 10, 3, 35)
    assert finding["name"] == "deprecated-amp-api"
    assert finding["confidence"] == "high"
    assert finding["fix"]["safety"] == "safe"
    assert set(finding["fix"]["edits"][0]) == {"line", "column", "end_line", "end_column", "content"}


def test_json_order_is_path_line_column_code(tmp_path):
    write(tmp_path, "b.py", DEFECT + "s2 = torch.cuda.amp.GradScaler(); s3 = torch.cpu.amp.GradScaler()\n")
    write(tmp_path, "a.py", DEFECT)
    findings = json.loads(run_cli("check", "--format", "json", ".", cwd=tmp_path).stdout)
    keys = [(f["path"], f["line"], f["column"], f["code"]) for f in findings]
    assert keys == sorted(keys) and len(keys) == 4


def test_noqa_forms_suppress(tmp_path):
    source = textwrap.dedent(
        """\
        import torch
        a = torch.cuda.amp.GradScaler()  # noqa
        b = torch.cuda.amp.GradScaler()  # noqa: DTL201
        c = torch.cuda.amp.GradScaler()  # noqa:DTL303,DTL201
        d = torch.cuda.amp.GradScaler()  # dtype-lint: ignore[DTL201]
        e = torch.cuda.amp.GradScaler()  # dtype-lint: ignore
        f = dict(  # noqa: DTL201
            s=torch.cuda.amp.GradScaler(),
        )
        g = torch.cuda.amp.GradScaler()  # noqa: DTL303
        h = torch.cuda.amp.GradScaler()  # dtype-lint: ignore[DTL303]
        """
    )
    write(tmp_path, "t.py", source)
    findings = json.loads(run_cli("check", "--format", "json", "t.py", cwd=tmp_path).stdout)
    assert [f["line"] for f in findings] == [10, 11]


def test_select_and_ignore_flags(tmp_path):
    write(tmp_path, "t.py", DEFECT)
    assert run_cli("check", "--ignore", "DTL2", "t.py", cwd=tmp_path).returncode == 0
    assert run_cli("check", "--select", "DTL3", "t.py", cwd=tmp_path).returncode == 0
    assert run_cli("check", "--select", "DTL3", "--extend-select", "DTL201", "t.py", cwd=tmp_path).returncode == 1
    # The more specific selector wins, as in ruff.
    assert run_cli("check", "--ignore", "DTL", "--select", "DTL201", "t.py", cwd=tmp_path).returncode == 1


def test_directories_skip_venvs_build_dirs_and_gitignored_files(tmp_path):
    write(tmp_path, "src/train.py", DEFECT)
    write(tmp_path, "build/lib/train.py", DEFECT)
    write(tmp_path, "env/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "env/lib/x.py", DEFECT)
    write(tmp_path, "generated/out.py", DEFECT)
    write(tmp_path, ".gitignore", "generated/\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    findings = json.loads(run_cli("check", "--format", "json", ".", cwd=tmp_path).stdout)
    assert sorted({f["path"] for f in findings}) == [os.path.join("src", "train.py")]
    # A file named explicitly is always checked (pre-commit passes names).
    explicit = json.loads(run_cli("check", "--format", "json", "generated/out.py", cwd=tmp_path).stdout)
    assert len(explicit) == 1


def test_rule_command_prints_doc_and_lists_all():
    result = run_cli("rule", "DTL201")
    assert result.returncode == 0
    assert result.stdout.startswith("# deprecated-amp-api (DTL201)")
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert heading in result.stdout
    listing = json.loads(run_cli("rule", "--all", "--format", "json").stdout)
    codes = [rule["code"] for rule in listing]
    assert codes == sorted(codes) and "DTL201" in codes and "DTL001" in codes
    assert all(rule["explanation"] for rule in listing)
    unknown = run_cli("rule", "DTL999")
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr


def test_version_and_module_entry_point():
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("dtype-lint ")
    console = subprocess.run(["dtype-lint", "--version"], capture_output=True, text=True)
    assert console.stdout == result.stdout


def test_stdin_is_checked(tmp_path):
    result = run_cli("check", "--format", "json", "--stdin-filename", "train.py", "-", stdin=DEFECT, cwd=tmp_path)
    findings = json.loads(result.stdout)
    assert [f["path"] for f in findings] == ["train.py"]


def test_static_path_never_imports_torch():
    code = textwrap.dedent(
        f"""
        import sys
        from dtype_lint.cli import main
        main(["check", "--exit-zero", "--no-cache", "--jobs", "1", {str(ROOT / 'fixtures')!r}])
        main(["rule", "--all"])
        import dtype_lint.flake8_plugin
        assert "torch" not in sys.modules, sorted(m for m in sys.modules if m.startswith("torch"))
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]

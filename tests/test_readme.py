"""README and docs/ stay true: the two set-up commands come first, the README stays short, its
family table's examples are reported as it says, its output is what `check` prints, its install
line installs, its configuration is accepted, and every link between the pages resolves. (The
pre-commit snippets are run by tests/test_precommit.py; rule pages by tests/test_rule_docs.py.)"""

import json
import re
import subprocess
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

from conftest import ROOT, run_cli
from dtype_lint import __version__
from dtype_lint.rule_docs import HOMEPAGE
from dtype_lint.rules import all_rules

README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").rglob("*.md"))
PAGES = {path: path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *DOCS]}
FAMILY_ROW = re.compile(r"^\| (DTL\d) \| [^|]+ \| `([^`]+)` \| (DTL\d{3}) \|$", flags=re.M)
FENCE = re.compile(r"^```.*?^```", flags=re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_setup_commands_come_first_and_ci_runs_the_test_command():
    blocks = re.findall(r"```bash\n(.*?)\n```", README, flags=re.S)
    assert blocks[0].startswith("pip install . && dtype-lint check ")
    assert blocks[1] == "pip install -e '.[test]' && python -m pytest"


def test_ci_runs_both_readme_commands_in_a_venv_of_its_own():
    # CI reads the commands from README.md (so they are verbatim) and installs nothing beforehand:
    # the machine's Python must not hide a missing install step.
    lines = [line.strip() for line in CI.splitlines() if not line.strip().startswith("#")]
    assert 'python3 -m venv "$venv"' in lines
    assert '. "$venv/bin/activate"' in lines
    assert 'check_command="$(readme_command 0)"' in lines
    assert 'test_command="$(readme_command 1)"' in lines
    assert not [line for line in lines if "pip install" in line]


def test_test_extra_pins_torch_to_the_cpu_build_on_disk():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert "torch==2.13.0" in extras["test"]


def test_readme_is_a_five_minute_read():
    assert len(README.splitlines()) < 200  # the rest belongs in docs/


def test_family_table_covers_every_family_and_each_example_is_reported_as_shown(tmp_path):
    rows = FAMILY_ROW.findall(README)
    assert [family for family, _, _ in rows] == sorted({rule.code[:4] for rule in all_rules()})
    for index, (family, example, code) in enumerate(rows):
        assert code.startswith(family), (family, code)
        (tmp_path / f"example_{index}.py").write_text(f"import torch\nfrom torch import nn\n{example}\n")
    result = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    reported = {(Path(finding["path"]).name, finding["code"]) for finding in json.loads(result.stdout)}
    missing = [(example, code) for index, (_, example, code) in enumerate(rows) if (f"example_{index}.py", code) not in reported]
    assert not missing, sorted(reported)


def test_the_readme_output_is_what_check_prints(tmp_path):
    block = re.search(r"```console\n\$ (dtype-lint check runtime/scenarios/\S+)\n(.*?)```", README, flags=re.S)
    result = run_cli(*block.group(1).split()[1:], cwd=ROOT, env={"DTYPE_LINT_CACHE_DIR": str(tmp_path)})
    assert result.stdout == block.group(2)


def test_install_urls_name_the_homepage_and_its_main_branch_everywhere():
    urls = {url for text in PAGES.values() for url in re.findall(r"git\+(https://[^\s\"']+)", text)}
    assert urls == {f"{HOMEPAGE}@main"}  # no release or tag exists to name instead
    remote_hooks = [
        block for text in PAGES.values()
        for block in re.findall(r"```yaml\n(# \.pre-commit-config\.yaml\nrepos:\n  - repo: https://.*?)```", text, flags=re.S)
    ]
    assert len(remote_hooks) >= 2 and len(set(remote_hooks)) == 1  # README's and docs/integrations.md's agree


def test_the_readme_install_line_installs_this_commit_from_a_git_main_branch(tmp_path):
    """The README's requirement, word for word but for the URL (this machine cannot reach GitHub):
    a clone of this commit stands in for the repository, its `main` this commit."""
    (requirement,) = re.findall(r'^pip install "(dtype-lint @ git\+\S+)"$', README, flags=re.M)
    url = f"git+{HOMEPAGE}"
    assert requirement == f"dtype-lint @ {url}@main"
    clone = tmp_path / "dtype-lint"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, capture_output=True, timeout=300)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "update-ref", "refs/heads/main", head], cwd=clone, check=True, capture_output=True)
    # pip's URL parser wants a host in a git+file URL: localhost.
    local = requirement.replace(url, f"git+file://localhost{clone}")
    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), local],
        capture_output=True, text=True, timeout=600,
    )
    assert installed.returncode == 0, installed.stderr
    imported = subprocess.run(
        [sys.executable, "-c", "import dtype_lint; print(dtype_lint.__file__, dtype_lint.__version__)"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(site)}, timeout=60,
    )
    assert imported.stdout.split() == [str(site / "dtype_lint" / "__init__.py"), __version__], imported.stderr


def test_configuration_examples_are_accepted(tmp_path):
    for name in ("README.md", "docs/configuration.md"):
        (block,) = re.findall(r"```toml\n(\[tool\.dtype-lint\]\n.*?)```", PAGES[ROOT / name], flags=re.S)
        project = tmp_path / name.replace("/", "_")
        project.mkdir()
        (project / "pyproject.toml").write_text(block)
        (project / "train.py").write_text("import torch\n")
        result = run_cli("check", "--show-settings", "train.py", cwd=project)
        assert result.returncode == 0, f"{name}: {result.stderr}"


def test_code_blocks_in_toml_and_json_parse():
    for path, text in PAGES.items():
        for block in re.findall(r"```toml\n(.*?)```", text, flags=re.S):
            tomllib.loads(block)
        for block in re.findall(r"```json\n(.*?)```", text, flags=re.S):
            json.loads(block)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_relative_link_resolves_to_a_file_and_heading():
    broken = []
    for page, text in PAGES.items():
        for target in LINK.findall(FENCE.sub("", text)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor:
                body = FENCE.sub("", file.read_text(encoding="utf-8"))
                headings = {_slug(line.lstrip("#")) for line in body.splitlines() if line.startswith("#")}
                if anchor not in headings:
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken

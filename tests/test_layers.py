"""The layers of the analysis import one way: the per-file facts (``dtype_lint/facts``) never
import the project pass (``dtype_lint/project``), which feeds them worlds, call contexts and
checkpoint saves. An import there, even one deferred into a function, brings the circle back."""

import ast
from pathlib import Path

import dtype_lint

PACKAGE = Path(dtype_lint.__file__).parent


def _imported_modules(path: Path, root: Path = PACKAGE.parent) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:  # relative: resolve against the file's package
                package = path.relative_to(root).parent.parts
                base = ".".join(package[: len(package) - node.level + 1] + (node.module,))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def test_facts_never_import_the_project_pass():
    offending = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for path in sorted((PACKAGE / "facts").rglob("*.py"))
        for line, name in _imported_modules(path)
        if name == "dtype_lint.project" or name.startswith("dtype_lint.project.")
    ]
    assert offending == []


def test_the_check_sees_a_deferred_relative_import(tmp_path):
    # the test above must be able to fail: an import inside a function, written relative, is seen
    facts = tmp_path / "dtype_lint" / "facts"
    facts.mkdir(parents=True)
    module = facts / "probe.py"
    module.write_text("def f():\n    from ..project import worlds\n", encoding="utf-8")
    assert (2, "dtype_lint.project.worlds") in _imported_modules(module, root=tmp_path)

"""How much of the torch API that real code uses the semantics data knows (issue 20, item 1).

    python benchmarks/semantics_coverage.py                  # the 12 precision-dev repositories
    python benchmarks/semantics_coverage.py --missing 40     # and the 40 most used names it lacks
    python benchmarks/semantics_coverage.py --tree DIR       # any other source tree

Each repository of ``../shared/precision-dev/repos.tsv`` is exported at its pinned commit from
the mirror the ``fetch`` tool made (``<mirror-root>/<owner>+<name>/repo``, a bare git directory)
into ``benchmarks/.work/semantics/<name>/`` (``git archive COMMIT | tar -x``), then every ``.py``
file is read with ``ast``:

* **torch names**: attribute chains whose root is bound by an import of torch (``torch``,
  ``nn``, ``F``, ``from torch.nn import Linear``), resolved to the qualified name
  (``F.softmax`` -> ``torch.nn.functional.softmax``) and cut after the first object that is not
  a module: a name is a module's attribute (``torch.distributed.ReduceOp.SUM`` counts as
  ``torch.distributed.ReduceOp``, ``torch.finfo(x).max`` as ``torch.finfo``; ``model.weight``
  is not rooted at torch). Private names (a part that starts with ``_``: ``torch._C``,
  ``torch.nn.modules.utils._pair``) are not torch's public API: they are counted apart and left
  out of the figure.
* **not torch's**: a module's Python attributes (``torch.cuda.__file__``), standard-library
  names a torch module imported (``torch.cuda.os``, ``torch.multiprocessing.Process``) and the op
  namespaces projects register (``torch.ops.detectron2``) are counted apart too; the script also
  prints the figure with private and foreign names counted in.
* **Tensor methods**: ``x.NAME(...)`` calls on anything not rooted at an import, where NAME is a
  public method of ``torch.Tensor`` (``.float()``, ``.view()``, ``.masked_fill()``); a method of
  a user class with a Tensor method's name counts too (the scan cannot tell them apart).

A name is *covered* when the data file has an entry for it that says what it does to dtypes (a
dtype rule, a module, a dtype constant, or "returns no tensor"); names whose entry says only
"returns a tensor of a dtype the generator could not derive" are counted apart as *known
unknown*. The figure is over distinct names per family, and weighted by uses. This script imports
torch (to know which names exist); the analyzer never does.
"""

from __future__ import annotations

import argparse
import ast
import csv
import inspect
import subprocess
import sys
import types
import warnings
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from dtype_lint.facts import semantics  # noqa: E402

REPOS = ROOT.parent / "shared" / "precision-dev" / "repos.tsv"
WORK = HERE / ".work" / "semantics"
FAMILIES = ("torch", "torch.nn", "torch.nn.functional", "Tensor")


def export(repo: str, commit: str, mirror_root: Path) -> Path:
    """The repository's ``.py`` files at ``commit``, exported once under benchmarks/.work."""
    target = WORK / repo.replace("/", "+")
    marker = target / ".exported"
    if marker.exists() and marker.read_text() == commit:
        return target
    git_dir = mirror_root / repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        raise SystemExit(f"error: no mirror of {repo} at {git_dir} (bring it with the fetch tool: github:{repo})")
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit, "--", "*.py"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    marker.write_text(commit)
    return target


class _Names(ast.NodeVisitor):
    """torch-rooted attribute chains and Tensor-method calls of one module."""

    def __init__(self, torch_module, tensor_methods: frozenset) -> None:
        self.torch = torch_module
        self.tensor_methods = tensor_methods
        self.aliases: dict[str, str] = {}
        self.used: Counter = Counter()

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "torch" or alias.name.startswith("torch."):
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    self.aliases["torch"] = "torch"

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level == 0 and (module == "torch" or module.startswith("torch.")):
            for alias in node.names:
                if alias.name != "*":
                    self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _chain(node)
        if chain is not None and chain[0] in self.aliases:
            self._record(chain)
            return  # the chain's inner attributes are parts of this one name
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.aliases and "." in self.aliases[node.id]:
            self._record([node.id])  # ``Linear(...)`` after ``from torch.nn import Linear``

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in self.tensor_methods:
            chain = _chain(func)
            if chain is None or chain[0] not in self.aliases:
                self.used[("Tensor", f"Tensor.{func.attr}")] += 1
        self.generic_visit(node)

    def _record(self, chain: list[str]) -> None:
        qualified = self.aliases[chain[0]].split(".") + chain[1:]
        # A name is a module's attribute: follow modules, stop at the first object that is not
        # one (``torch.distributed.ReduceOp.SUM`` is ``torch.distributed.ReduceOp``,
        # ``torch.nn.Module.__init__`` is ``torch.nn.Module``); ``torch.Tensor.x`` is a method.
        target, kept = self.torch, ["torch"]
        for part in qualified[1:]:
            if not isinstance(target, types.ModuleType):
                break
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    target = getattr(target, part)
            except Exception:
                break
            kept.append(part)
        if len(kept) < 2:
            return
        if kept[:2] == ["torch", "Tensor"] and len(qualified) > 2 and qualified[2] in self.tensor_methods:
            self.used[("Tensor", f"Tensor.{qualified[2]}")] += 1
            return
        name = ".".join(kept)
        private = any(part.startswith("_") and not (part.startswith("__") and part.endswith("__")) for part in kept)
        if private:
            self.used[("private", name)] += 1
        elif _foreign(name, target):
            self.used[("foreign", name)] += 1
        else:
            self.used[(_family(name), name)] += 1


def _foreign(name: str, target) -> bool:
    """Not torch's API though reached through it: a module's own Python attributes
    (``torch.cuda.__file__``), standard-library modules and names a torch module imported
    (``torch.cuda.os``, ``torch.cuda.Any``, ``torch.multiprocessing.Process``), and the
    namespaces of ops a project registers (``torch.ops.detectron2``)."""
    last = name.rsplit(".", 1)[-1]
    if last.startswith("__") and last.endswith("__") and last != "__version__":
        return True
    if name.startswith("torch.ops.") and name.split(".")[2] not in ("aten", "prims", "quantized"):
        return True
    if isinstance(target, types.ModuleType):
        return not target.__name__.startswith("torch")
    if inspect.isclass(target) or inspect.isfunction(target) or inspect.ismethod(target):
        module = getattr(target, "__module__", None) or ""
        return not module.startswith("torch")
    return getattr(target, "__module__", None) == "typing"  # ``torch.cuda.Optional``


def _chain(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _family(name: str) -> str:
    if name.startswith("torch.nn.functional."):
        return "torch.nn.functional"
    if name.startswith("torch.nn."):
        return "torch.nn"
    return "torch"


def scan(tree: Path, torch_module, tensor_methods: frozenset) -> Counter:
    used: Counter = Counter()
    for path in sorted(tree.rglob("*.py")):
        try:
            module = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError):
            continue
        visitor = _Names(torch_module, tensor_methods)
        # imports first, wherever they sit, so a use above a local import still resolves
        for node in ast.walk(module):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                visitor.visit(node)
        if visitor.aliases:
            visitor.visit(module)
        used.update(visitor.used)
    return used


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=Path, default=REPOS, help="repos.tsv (repo, commit)")
    parser.add_argument("--mirror-root", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--tree", type=Path, action="append", help="scan this tree instead of the repositories")
    parser.add_argument("--missing", type=int, default=0, metavar="N", help="list the N most used uncovered names")
    parser.add_argument("--torch", default=None, help="the data file's torch version (default: the newest)")
    args = parser.parse_args(argv)

    import torch

    tensor_methods = frozenset(n for n in dir(torch.Tensor) if not n.startswith("_") and callable(getattr(torch.Tensor, n, None)))
    if args.tree:
        trees = args.tree
    else:
        with open(args.repos, newline="") as handle:
            trees = [export(row["repo"], row["commit"], args.mirror_root) for row in csv.DictReader(handle, delimiter="\t")]
    used: Counter = Counter()
    for tree in trees:
        used.update(scan(tree, torch, tensor_methods))

    data = semantics.load(args.torch)
    print(f"semantics data: torch {data.torch_version} ({data.path.name}); {len(trees)} trees")
    print(f"{'family':<22}{'names':>7}{'covered':>9}{'known unknown':>15}{'missing':>9}{'% names':>9}{'% uses':>8}")
    totals = Counter()
    missing: Counter = Counter()
    for family in FAMILIES:
        names = {name: count for (fam, name), count in used.items() if fam == family}
        covered = {n for n in names if data.describes(n)}
        unknown = {n for n in names if data.has(n) and n not in covered}
        for name in names:
            if name not in covered:
                missing[name] = names[name]
        uses = sum(names.values())
        covered_uses = sum(names[n] for n in covered)
        totals.update(names=len(names), covered=len(covered), unknown=len(unknown), uses=uses, covered_uses=covered_uses)
        print(f"{family:<22}{len(names):>7}{len(covered):>9}{len(unknown):>15}{len(names) - len(covered) - len(unknown):>9}"
              f"{_percent(len(covered), len(names)):>9}{_percent(covered_uses, uses):>8}")
    print(f"{'all':<22}{totals['names']:>7}{totals['covered']:>9}{totals['unknown']:>15}"
          f"{totals['names'] - totals['covered'] - totals['unknown']:>9}"
          f"{_percent(totals['covered'], totals['names']):>9}{_percent(totals['covered_uses'], totals['uses']):>8}")
    public = [n for (f, n) in used if f in FAMILIES]
    kinds = Counter(data.kind(n) if data.describes(n) else "not described" for n in public)
    print("by kind: " + ", ".join(f"{kind} {count}" for kind, count in kinds.most_common())
          + "  (op/module: a dtype rule; class/nontensor/namespace/value/dtype: no tensor comes out)")
    private = {name: count for (fam, name), count in used.items() if fam == "private"}
    foreign = {name: count for (fam, name), count in used.items() if fam == "foreign"}
    print(f"left out: {len(private)} private names ({sum(private.values())} uses), {len(foreign)} names that are not "
          f"torch's ({sum(foreign.values())} uses: module attributes, re-exported standard library, project op namespaces)")
    everything = {**{n: c for (f, n), c in used.items() if f in FAMILIES}, **private, **foreign}
    described = sum(1 for n in everything if data.describes(n))
    print(f"counting those too: {described}/{len(everything)} names described ({_percent(described, len(everything))} %)")
    if args.missing:
        print(f"\nmost used names without a described entry ({len(missing)}):")
        for name, count in missing.most_common(args.missing):
            state = "known unknown" if data.has(name) else "absent"
            print(f"  {count:>6}  {name}  ({state})")
    return 0


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}" if whole else "-"


if __name__ == "__main__":
    sys.exit(main())

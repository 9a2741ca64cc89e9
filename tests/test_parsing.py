"""The engine's parse skips libcst's per-node validation; the trees and errors must not change."""

from pathlib import Path

import libcst as cst
import pytest

from conftest import FIXTURES, ROOT
from dtype_lint.parsing import parse_module

SOURCES = sorted(FIXTURES.rglob("*.py"))[::5] + sorted((ROOT / "tests" / "data" / "corpus_sample").glob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_same_tree_as_libcst(path: Path):
    text = path.read_text(encoding="utf-8")
    ours, theirs = parse_module(text), cst.parse_module(text)
    assert ours.deep_equals(theirs)
    assert ours.code == text


def test_syntax_errors_are_still_raised():
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def broken(:\n    pass\n")


def test_validation_is_back_on_afterwards_even_after_an_error():
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("x = (\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name!")
    parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


# Issue 14: PEP 695 code (3.12) got a spurious DTL001 because the syntax check used the running
# interpreter's parser. With a target version, newer syntax is judged by libcst's grammar.
PEP_695 = "import torch\ntype Pair[T] = tuple[T, T]\ndef first[T](x: T) -> T:\n    return torch.zeros(1).cuda().half()\n"


def _codes(text: str, settings) -> list[str]:
    from dtype_lint.engine import check_text

    return [finding.code for finding in check_text(text, "m.py", settings).findings]


def test_newer_syntax_is_accepted_up_to_the_target_version():
    import sys

    from dtype_lint.config import Settings

    assert "DTL001" not in _codes(PEP_695, Settings(target_version="3.13"))
    if sys.version_info < (3, 12):  # this interpreter's own parser refuses it
        assert _codes(PEP_695, Settings(target_version="3.11")) == ["DTL001"]


def test_real_syntax_errors_keep_cpythons_message():
    from dtype_lint.config import Settings
    from dtype_lint.engine import check_text

    report = check_text("def broken(:\n    pass\n", "m.py", Settings())
    assert [(f.code, f.message) for f in report.findings] == [("DTL001", "Cannot check this file: syntax error: invalid syntax")]


def _children_field_by_field(node: cst.CSTNode) -> list[cst.CSTNode]:
    """What ``child_nodes`` must return, spelled out: the syntax fields in source order."""
    from dtype_lint.facts.training import _node_fields

    found = []
    for name in _node_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, (list, tuple)):
            found.extend(value)
        elif isinstance(value, cst.CSTNode):
            found.append(value)
    return found


def test_generated_child_getters_list_every_syntax_child_in_order():
    # child_nodes runs a function generated per node class (training.CHILD_GETTERS): it must
    # agree with reading the fields one by one, for every kind of node in these files
    from dtype_lint.facts.training import child_nodes, walk

    kinds = set()
    for path in SOURCES:
        for node in walk(parse_module(path.read_text(encoding="utf-8")), into_definitions=True):
            kinds.add(type(node))
            assert [id(c) for c in child_nodes(node)] == [id(c) for c in _children_field_by_field(node)]
    assert len(kinds) > 60


def test_ast_child_getters_match_iter_child_nodes():
    # the walks over CPython's tree (prefilter, depth guard, project summary) read children through
    # functions generated per node class (ast_children.py): the same nodes, in the same order
    import ast

    from dtype_lint.ast_children import child_nodes

    kinds = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            kinds.add(type(node))
            assert child_nodes(node) == list(ast.iter_child_nodes(node))
    assert len(kinds) > 50

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

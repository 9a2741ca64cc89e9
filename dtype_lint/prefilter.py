"""Which rules can have anything to say about a file, decided from its ``ast`` before libcst runs.

Most files of an ML repository hold no half-precision code at all; for them libcst, the facts
and the rules are skipped. CPython's ``ast`` parses about ten times faster than libcst and the
engine parses every file with it anyway (to report DTL001), so the decision reads that tree.

A rule lists ``triggers``: substrings of which at least one must occur in one of the file's
**code words** for the rule to be run on it (``required_triggers`` adds further groups, each of
which must match too). Code words are what the program itself spells: identifiers (names,
attributes, keyword arguments, parameters, definitions, imported modules and names) and the words
of string constants that are not docstrings. Comments and docstrings are prose, not code words,
so a pipeline whose docstring example says ``torch.float16`` does not wake the half-precision
rules. Numbers give a word only when far from 1 (``literal_e38`` for -3.4e38, ``literal_em8`` for
1e-8, ``literal_inf`` for ``float("-inf")``), and a ``**`` gives ``__pow__``, for the rules about
overflowing and vanishing values.

A rule's triggers must be a necessary condition of every finding it can report:
tests/test_prefilter.py checks that findings are identical with and without the prefilter on
every fixture, every rule's examples and a corpus sample; benchmarks/bench.py
``--verify-prefilter`` does it on the whole benchmark corpus.
"""

from __future__ import annotations

import ast
import math
import re
from typing import TYPE_CHECKING, Iterable

from dtype_lint.ast_children import GETTERS as CHILD_GETTERS

if TYPE_CHECKING:
    from dtype_lint.rules.base import Rule

_WORD = re.compile(r"\w+")
_WORDS_SEPARATOR = "\n"
MAGNITUDE_PREFIX = "literal_e"
POWER_WORD = "__pow__"
INFINITY_WORD = "literal_inf"
_NUMBER_STARTS = frozenset("+-.0123456789")


class CodeWords:
    """A file's code words: ``text`` joins them between newlines (a plain trigger matches within a
    word), ``words`` holds them for whole-word triggers (``exact_word``)."""

    __slots__ = ("words", "text")

    def __init__(self, words: set[str]) -> None:
        self.words = frozenset(words)
        self.text = _WORDS_SEPARATOR + _WORDS_SEPARATOR.join(sorted(words)) + _WORDS_SEPARATOR

    def __contains__(self, trigger: str) -> bool:
        if trigger.startswith(_WORDS_SEPARATOR):
            return trigger[1:-1] in self.words
        return trigger in self.text


def code_words(tree: ast.AST) -> CodeWords:
    """The code words of a parsed file (see the module's doc)."""
    words: set[str] = set()
    add = words.add
    children = CHILD_GETTERS
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            add(node.id)
            continue
        if kind is ast.Attribute:
            add(node.attr)
        elif kind is ast.Constant:
            value = node.value
            if type(value) is str:
                words.update(_WORD.findall(value))
                value = _number_in_string(value)
            if type(value) in (int, float):
                magnitude = _magnitude_word(value)
                if magnitude:
                    add(magnitude)
            continue
        elif kind is ast.Expr and type(node.value) is ast.Constant:
            continue  # a docstring or a bare string statement: prose, not code
        elif kind is ast.BinOp or kind is ast.AugAssign:
            if type(node.op) is ast.Pow:
                add(POWER_WORD)  # a power of small literals can be a huge or tiny number
        elif kind is ast.keyword or kind is ast.arg:
            if node.arg:
                add(node.arg)
        elif kind is ast.alias:
            words.update(node.name.split("."))
            if node.asname:
                add(node.asname)
        elif kind is ast.ImportFrom:
            if node.module:
                words.update(node.module.split("."))
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            add(node.name)
        elif kind is ast.Global or kind is ast.Nonlocal:
            words.update(node.names)
        elif kind is ast.ExceptHandler or kind is ast.MatchAs or kind is ast.MatchStar:
            if node.name:
                add(node.name)
        stack.extend(children[kind](node))
    return CodeWords(words)


def _number_in_string(text: str) -> float | None:
    """``float("-1e9")``: a string the program may turn into a number."""
    if not text or len(text) > 32 or text.lstrip()[:1] not in _NUMBER_STARTS:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _magnitude_word(value: int | float) -> str | None:
    """``literal_e38`` for a literal of about 1e38 (any mantissa, either sign), ``literal_em8``
    for about 1e-8, ``literal_inf`` for an infinity: numbers far from 1 are what the numerics
    rules look for; ordinary ones (exponent -3..3) give no word."""
    if value in (math.inf, -math.inf):
        return INFINITY_WORD  # float("-inf"), float("Infinity")
    if value == 0 or value != value:
        return None
    try:
        exponent = math.floor(math.log10(abs(value)))
    except (OverflowError, ValueError):
        return None
    return _magnitude(exponent) if abs(exponent) >= 4 else None


def _magnitude(exponent: int) -> str:
    # a word: ``literal_e38``, ``literal_em8`` (m for minus)
    return f"{MAGNITUDE_PREFIX}{exponent}" if exponent >= 0 else f"{MAGNITUDE_PREFIX}m{-exponent}"


def magnitude_words(lowest: int, highest: int) -> tuple[str, ...]:
    """Triggers for a literal whose decimal exponent lies in ``lowest..highest`` (see ``_magnitude_word``)."""
    return tuple(exact_word(_magnitude(exponent)) for exponent in range(lowest, highest + 1))


def exact_word(word: str) -> str:
    """A trigger that matches ``word`` only as a whole code word (a plain trigger matches within one)."""
    return f"{_WORDS_SEPARATOR}{word}{_WORDS_SEPARATOR}"


TRIGGER_PATTERN = re.compile(r"^(\w+|\n\w+\n)$")


def can_apply(rule: type["Rule"], words: CodeWords) -> bool:
    if rule.triggers and not any(trigger in words for trigger in rule.triggers):
        return False
    return all(any(trigger in words for trigger in group) for group in rule.required_triggers)


def rules_for(words: CodeWords, rules: Iterable[type["Rule"]]) -> list[type["Rule"]]:
    """The rules whose triggers occur among ``words`` (see ``code_words``), in the order given."""
    return [rule for rule in rules if can_apply(rule, words)]


def words_of_source(text: str) -> CodeWords | None:
    """``code_words`` of a source text; None when it does not parse."""
    try:
        return code_words(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None

"""The rule API: one class per rule, carrying its code, its doc and its examples.

A rule declares ``visit_<Node>`` / ``leave_<Node>`` methods (libcst node class names); one
traversal of the file calls every enabled rule's methods (see ``dtype_lint.runner``). A rule asks
questions of ``self.ctx`` (the file's facts) and calls ``self.report``.

Its class docstring is its documentation (ruff's headings), printed by ``dtype-lint rule CODE``;
``valid`` and ``invalid`` are run as tests.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import textwrap
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from dtype_lint.facts.deliberate import API_RULES, SETUP_RULES, expects_failure, in_precision_test, is_test_file
from dtype_lint.findings import Confidence, Edit, Finding, Fix, Safety
from dtype_lint.prefilter import TRIGGER_PATTERN

if TYPE_CHECKING:
    from dtype_lint.context import FileContext

CODE_PATTERN = re.compile(r"^DTL\d{3}$")
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DOC_HEADINGS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety")

REGISTRY: dict[str, type["Rule"]] = {}


# Dtype-tracking rules whose low-confidence findings are not reported. On 17 unseen repositories
# (benchmarks/LOWCONF-TRIAGE.tsv, issue 21 item 6) these eleven were the only rules reporting at
# low, and none of their low findings read was true (0 of 40 sampled, 0 of 5 more): low is
# where they guess (a checkpoint or caller dtype nobody states, a test doing it on purpose), and
# a rule that does not know stays silent.
SILENT_AT_LOW = frozenset({
    "DTL101", "DTL102", "DTL203", "DTL208", "DTL502", "DTL503", "DTL506", "DTL507", "DTL510", "DTL602", "DTL703",
})


class DuplicateRuleError(RuntimeError):
    pass


@dataclasses.dataclass(frozen=True)
class Invalid:
    """An example the rule must flag; ``fixed`` is the source after all its fixes (unsafe too).
    ``targets``: the project versions it is checked under (``(("target_torch", "2.9"),)``), for
    rules whose advice depends on them."""

    source: str
    fixed: str | None = None
    targets: tuple[tuple[str, str], ...] = ()


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    # Which facts of the analysis the rule asks, in a user's words, each naming the module under
    # dtype_lint/ that computes it: "the dtype flow: ... (facts/dtypes.py)". Its doc shows them
    # as "What it asks the analysis" (dtype_lint.rule_docs).
    queries: ClassVar[tuple[str, ...]] = ()
    # Safety of the fix this rule offers, or None when it offers none.
    fix_safety: ClassVar[Safety | None] = None
    # Substrings of which at least one must occur in one of a file's code words (identifiers and
    # string constants, see dtype_lint.prefilter) for the rule to have anything to say; a rule
    # none of whose triggers occurs is not run on the file, and when no rule is left the file is
    # not parsed by libcst at all. Empty: always run.
    triggers: ClassVar[tuple[str, ...]] = ()
    # Further conditions: from each group too, at least one trigger must occur (an AND of ORs),
    # e.g. ``(LOWP_TRIGGERS,)`` for a rule that also needs a float16/bfloat16 value.
    required_triggers: ClassVar[tuple[tuple[str, ...], ...]] = ()
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[Invalid, ...]] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.code:
            return
        if not CODE_PATTERN.match(cls.code):
            raise ValueError(f"{cls.__name__}: bad rule code {cls.code!r}")
        if not NAME_PATTERN.match(cls.name):
            raise ValueError(f"{cls.__name__}: rule name must be kebab-case, got {cls.name!r}")
        for trigger in cls.triggers + tuple(t for group in cls.required_triggers for t in group):
            if not isinstance(trigger, str) or not TRIGGER_PATTERN.match(trigger):
                raise ValueError(f"{cls.code}: trigger {trigger!r} is not a word (code words are identifiers and string words)")
        existing = REGISTRY.get(cls.code)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise DuplicateRuleError(
                f"rule code {cls.code} registered twice: {existing.__module__}.{existing.__qualname__}"
                f" and {cls.__module__}.{cls.__qualname__}"
            )
        REGISTRY[cls.code] = cls

    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx
        self.reported: list[tuple[Finding, int]] = []

    @classmethod
    def doc(cls) -> str:
        return textwrap.dedent(inspect.cleandoc(cls.__doc__ or "")).strip()

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        confidence: Confidence = Confidence.HIGH,
        fix: Fix | None = None,
    ) -> None:
        if self.code not in API_RULES:
            # Tests exercise precision patterns on purpose (issue 14, cause 6): nothing inside an
            # expected failure, no precision set-up (the test's subject), one level less anywhere
            # else in a test file, low in a test named for autocast, AMP, scalers or a half dtype.
            if expects_failure(self.ctx, node):
                return
            if is_test_file(self.ctx.path):
                if self.code in SETUP_RULES:
                    return
                confidence = Confidence(max(Confidence.LOW, confidence - 1))
                if in_precision_test(self.ctx, node):
                    confidence = Confidence.LOW  # a test of autocast/AMP/scalers: the pattern is its subject
            if confidence == Confidence.LOW and self.code in SILENT_AT_LOW:
                return
        position = self.ctx.position(node)
        finding = Finding(
            code=self.code,
            name=self.name,
            message=message,
            line=position.start.line,
            column=position.start.column + 1,
            end_line=position.end.line,
            end_column=position.end.column + 1,
            confidence=confidence,
            fix=fix,
        )
        self.reported.append((finding, self.ctx.statement_first_line(node)))

    # -- fix helpers ---------------------------------------------------------------------------
    def replace(self, node: cst.CSTNode, content: str) -> Edit:
        position = self.ctx.position(node)
        return Edit(
            position.start.line,
            position.start.column + 1,
            position.end.line,
            position.end.column + 1,
            content,
        )

    def insert_before_statement(self, statement: cst.CSTNode, line_text: str) -> Edit:
        """Insert ``line_text`` as a new line above ``statement``, at its indentation."""
        position = self.ctx.position(statement)
        line = position.start.line
        indent = re.match(r"[ \t]*", self.ctx.lines[line - 1]).group(0)
        newline = self.ctx.newline
        return Edit(line, 1, line, 1, f"{indent}{line_text}{newline}")

    def insert_after_statement(self, statement: cst.CSTNode, line_text: str) -> Edit:
        position = self.ctx.position(statement)
        line = position.end.line
        indent = re.match(r"[ \t]*", self.ctx.lines[position.start.line - 1]).group(0)
        return Edit(line + 1, 1, line + 1, 1, f"{indent}{line_text}{self.ctx.newline}")

    def module_for_fix(self, module: str):
        """How fix content spells ``module`` in this file, as ``(name, edits)``: ``name`` respects
        aliases (``import torch as T`` gives ``"T"``) and ``edits`` adds ``import module`` once
        when the file lacks it (put them in the Fix). None: offer no fix (the file imports it
        only in a fallback or guarded branch). See ``dtype_lint.fixer.imports``."""
        from dtype_lint.fixer.imports import module_reference

        return module_reference(self.ctx, module)

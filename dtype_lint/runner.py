"""One traversal of a file's tree that calls the hooks of every enabled rule.

A rule that raises is reported as an internal error (with its code and the file) and dropped
for the rest of the file; the other rules go on.
"""

from __future__ import annotations

import traceback
from collections import defaultdict

import libcst as cst

from dtype_lint.context import FileContext
from dtype_lint.findings import Finding
from dtype_lint.rules.base import Rule


class InternalError(Exception):
    pass


class _Dispatcher:
    """Calls each rule's ``visit_<Node>`` / ``leave_<Node>`` hooks for a node."""

    def __init__(self, ctx: FileContext, rules: list[Rule]) -> None:
        self.ctx = ctx
        self.rules = rules
        self.failed: dict[str, str] = {}
        self._visit: dict[str, list] = defaultdict(list)
        self._leave: dict[str, list] = defaultdict(list)
        for rule in rules:
            for attribute in sorted(dir(type(rule))):
                if attribute.startswith("visit_"):
                    self._visit[attribute[6:]].append((rule, getattr(rule, attribute)))
                elif attribute.startswith("leave_"):
                    self._leave[attribute[6:]].append((rule, getattr(rule, attribute)))

    def _call(self, hooks, node) -> None:
        for rule, hook in hooks:
            if rule.code in self.failed:
                continue
            try:
                hook(node)
            except Exception as error:  # noqa: BLE001 - one broken rule must not stop the others
                frame = traceback.extract_tb(error.__traceback__)[-1]
                self.failed[rule.code] = (
                    f"{type(error).__name__}: {error} ({frame.filename}:{frame.lineno})"
                )

    def on_visit(self, node: cst.CSTNode) -> bool:
        hooks = self._visit.get(type(node).__name__)
        if hooks:
            self._call(hooks, node)
        self.ctx.ancestors.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.ctx.ancestors.pop()
        hooks = self._leave.get(type(original_node).__name__)
        if hooks:
            self._call(hooks, original_node)


def _walk(dispatcher: _Dispatcher, ctx: FileContext) -> None:
    """Calls the visit/leave hooks in source order (the walk libcst's visitors make), replaying
    the context's one walk of the tree (nodes' fields, no recursion: deep nesting cannot hit
    Python's recursion limit). libcst's own visitor rebuilds every node on the way back up and
    cost about as much as the parse."""
    visit, leave = dispatcher.on_visit, dispatcher.on_leave
    for node, entering in ctx.walk_events():
        if entering:
            visit(node)
        else:
            leave(node)


def run_rules(ctx: FileContext, rule_classes: list[type[Rule]]):
    """Findings (each with the first line of its statement, for suppressions) and failures."""
    rules = [rule_class(ctx) for rule_class in rule_classes]
    dispatcher = _Dispatcher(ctx, rules)
    _walk(dispatcher, ctx)
    reported: list[tuple[Finding, int]] = []
    for rule in rules:
        if rule.code not in dispatcher.failed:
            reported.extend(rule.reported)
    return reported, dispatcher.failed

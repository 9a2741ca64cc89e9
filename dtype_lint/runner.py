"""One traversal of a file's tree that calls the hooks of every enabled rule.

A rule that raises is reported as an internal error (with its code and the file) and dropped
for the rest of the file; the other rules go on.
"""

from __future__ import annotations

from collections import defaultdict

from dtype_lint.context import FileContext
from dtype_lint.errors import describe
from dtype_lint.findings import Finding
from dtype_lint.rules.base import Rule


class _Dispatcher:
    """Calls each rule's ``visit_<Node>`` / ``leave_<Node>`` hooks for a node."""

    def __init__(self, ctx: FileContext, rules: list[Rule]) -> None:
        self.ctx = ctx
        self.rules = rules
        self.failed: dict[str, str] = {}
        visit: dict[str, list] = defaultdict(list)
        leave: dict[str, list] = defaultdict(list)
        for rule in rules:
            for attribute in sorted(dir(type(rule))):
                if attribute.startswith("visit_"):
                    visit[attribute[6:]].append((rule, getattr(rule, attribute)))
                elif attribute.startswith("leave_"):
                    leave[attribute[6:]].append((rule, getattr(rule, attribute)))
        self._visit, self._leave = visit, leave

    def _call(self, hooks, node) -> None:
        for rule, hook in hooks:
            if rule.code in self.failed:
                continue
            try:
                hook(node)
            except Exception as error:  # noqa: BLE001 - one broken rule must not stop the others
                self.failed[rule.code] = describe(error)

    def walk(self) -> None:
        """Calls the visit/leave hooks in source order (the walk libcst's visitors make),
        replaying the context's one walk of the tree (nodes' fields, no recursion: deep nesting
        cannot hit Python's recursion limit), and keeps ``ctx.ancestors`` (the nodes above the
        current one) up to date. libcst's own visitor rebuilds every node on the way back up and
        cost about as much as the parse."""
        call = self._call
        # node class -> its hooks (None when it has none), looked up by name once per class
        visit_hooks: dict[type, list | None] = {}
        leave_hooks: dict[type, list | None] = {}
        ancestors = self.ctx.ancestors
        push, pop = ancestors.append, ancestors.pop
        for node, entering in self.ctx.walk_events():
            kind = type(node)
            if entering:
                try:
                    hooks = visit_hooks[kind]
                except KeyError:
                    hooks = visit_hooks[kind] = self._visit.get(kind.__name__)
                if hooks:
                    call(hooks, node)
                push(node)
            else:
                pop()
                try:
                    hooks = leave_hooks[kind]
                except KeyError:
                    hooks = leave_hooks[kind] = self._leave.get(kind.__name__)
                if hooks:
                    call(hooks, node)


def run_rules(ctx: FileContext, rule_classes: list[type[Rule]]):
    """Findings (each with the first line of its statement, for suppressions) and failures."""
    rules = [rule_class(ctx) for rule_class in rule_classes]
    dispatcher = _Dispatcher(ctx, rules)
    dispatcher.walk()
    reported: list[tuple[Finding, int]] = []
    for rule in rules:
        if rule.code not in dispatcher.failed:
            reported.extend(rule.reported)
    return reported, dispatcher.failed

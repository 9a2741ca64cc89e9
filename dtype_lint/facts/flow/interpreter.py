"""The statement-level abstract interpreter that fills a Flow (work in progress)."""

from __future__ import annotations

from dtype_lint.facts.dtypes import Flow


class Interpreter:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.flow = Flow()
        self.flow._parent = ctx.parent

    def run(self) -> Flow:
        return self.flow

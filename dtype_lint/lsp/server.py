"""The pygls language server: checks a document's unsaved text with the engine (settings from the
nearest pyproject.toml), publishes diagnostics (debounced on change), and offers each finding's
fixes, a ``# noqa`` suppression, "fix all safe" (the fixer's own rounds) and the rule's doc on hover.
"""

from __future__ import annotations

import asyncio
import functools
import os

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from dtype_lint import __version__
from dtype_lint.config import Settings, load_settings
from dtype_lint.errors import UsageError
from dtype_lint.findings import Finding, Safety
from dtype_lint.lsp import convert
from dtype_lint.rule_docs import rule_url

FIX_ALL_KIND = types.CodeActionKind.SourceFixAll + ".dtype-lint"


class DtypeLintServer(LanguageServer):
    def __init__(self, debounce: float) -> None:
        super().__init__("dtype-lint", __version__)
        self.debounce = debounce
        self.findings: dict[str, tuple[int | None, list[Finding]]] = {}  # uri -> (version, findings)
        self.pending: dict[str, asyncio.Task] = {}


@functools.lru_cache(maxsize=64)
def _settings_for(directory: str) -> Settings:
    from dtype_lint.targets import with_project_targets

    try:
        settings = load_settings(directory)
    except UsageError:
        settings = Settings(root=directory)
    return with_project_targets(settings, directory)


def settings_for(path: str) -> Settings:
    return _settings_for(os.path.dirname(os.path.abspath(path)))


def _check(server: DtypeLintServer, uri: str) -> None:
    from dtype_lint.engine import check_text

    document = server.workspace.get_text_document(uri)
    path = document.path
    if path.endswith(".ipynb"):
        return  # notebooks are checked by `dtype-lint check`; editors hand cells over differently
    report = check_text(document.source, path, settings_for(path))
    lines = document.source.splitlines()
    server.findings[uri] = (document.version, report.findings)
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=uri, version=document.version, diagnostics=[convert.diagnostic(lines, f) for f in report.findings]
        )
    )


def _schedule(server: DtypeLintServer, uri: str, delay: float) -> None:
    previous = server.pending.pop(uri, None)
    if previous is not None:
        previous.cancel()  # a newer edit supersedes it: check the latest text once

    async def later() -> None:
        await asyncio.sleep(delay)
        server.pending.pop(uri, None)
        _check(server, uri)

    server.pending[uri] = asyncio.ensure_future(later())


def build(debounce: float = 0.3) -> DtypeLintServer:
    server = DtypeLintServer(debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DtypeLintServer, params: types.DidOpenTextDocumentParams) -> None:
        _check(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DtypeLintServer, params: types.DidChangeTextDocumentParams) -> None:
        _schedule(ls, params.text_document.uri, ls.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: DtypeLintServer, params: types.DidSaveTextDocumentParams) -> None:
        _settings_for.cache_clear()  # a saved pyproject.toml may have changed the settings
        _schedule(ls, params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DtypeLintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.findings.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]),
    )
    def code_action(ls: DtypeLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return _code_actions(ls, params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: DtypeLintServer, params: types.HoverParams) -> types.Hover | None:
        return _hover(ls, params)

    return server


def _edit(uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=edits
            )
        ]
    )


def _code_actions(ls: DtypeLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    version, findings = ls.findings.get(uri, (None, []))
    if version != document.version:  # stale: recheck the text the edit will apply to
        _check(ls, uri)
        version, findings = ls.findings.get(uri, (None, []))
    lines = document.source.splitlines()
    only = params.context.only
    actions: list[types.CodeAction] = []
    wants_quickfix = not only or any(kind.startswith(types.CodeActionKind.QuickFix) for kind in only)
    for finding in findings if wants_quickfix else []:
        if not convert.overlaps(convert.finding_range(lines, finding), params.range):
            continue
        diagnostic = convert.diagnostic(lines, finding)
        if finding.fix is not None and finding.fix.edits:
            unsafe = finding.fix.safety is Safety.UNSAFE
            title = finding.fix.description or f"Fix {finding.code}"
            actions.append(types.CodeAction(
                title=f"{'Unsafe fix (review it): ' if unsafe else 'Fix: '}{title} ({finding.code})",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=not unsafe,
                edit=_edit(uri, version, [convert.text_edit(lines, edit) for edit in finding.fix.edits]),
            ))
        actions.append(types.CodeAction(
            title=f"Suppress with # noqa: {finding.code}",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=_edit(uri, version, [convert.noqa_edit(lines, finding)]),
        ))
    wants_fix_all = not only or any(FIX_ALL_KIND.startswith(kind) or kind == types.CodeActionKind.Source for kind in only)
    if wants_fix_all and any(f.fix is not None and f.fix.safety is Safety.SAFE for f in findings):
        from dtype_lint.fixer import fix_text

        outcome = fix_text(document.source, document.path, settings_for(document.path))
        if outcome.changed:
            end = types.Position(line=len(document.lines), character=0)
            whole = types.TextEdit(range=types.Range(types.Position(0, 0), end), new_text=outcome.text)
            actions.append(types.CodeAction(
                title=f"dtype-lint: fix all safe ({len(outcome.fixed)})", kind=FIX_ALL_KIND, edit=_edit(uri, version, [whole])
            ))
    return actions


def _hover(ls: DtypeLintServer, params: types.HoverParams) -> types.Hover | None:
    from dtype_lint.rules import all_rules

    uri = params.text_document.uri
    _, findings = ls.findings.get(uri, (None, []))
    lines = ls.workspace.get_text_document(uri).source.splitlines()
    point = types.Range(params.position, params.position)
    docs = {rule.code: rule.doc() for rule in all_rules()}
    hit = [f for f in findings if convert.overlaps(convert.finding_range(lines, f), point)]
    if not hit:
        return None
    text = "\n\n---\n\n".join(
        f"**[{f.code}]({rule_url(f.code)})** `{f.name}`: {f.message}\n\n{docs.get(f.code, '')}" for f in hit
    )
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))


def serve(debounce: float = 0.3) -> None:
    build(debounce).start_io()

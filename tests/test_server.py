"""``dtype-lint server`` end to end: the real server process over stdio, driven by pygls's client.

pygls is in the ``test`` extra: without it these tests fail at import, loudly, never skip.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient


SOURCE = textwrap.dedent(
    """\
    import torch


    def make():
        scaler = torch.cuda.amp.GradScaler()
        return scaler
    """
)


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (ASCII text here: UTF-16 characters are code points)."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: types.Position) -> int:
        return offsets[min(position.line, len(lines))] + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


async def _session(project: Path) -> dict:
    client = LanguageClient("dtype-lint-test", "1")
    published: asyncio.Queue = asyncio.Queue()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        published.put_nowait(params)

    async def next_diagnostics() -> types.PublishDiagnosticsParams:
        return await asyncio.wait_for(published.get(), timeout=60)

    await client.start_io(sys.executable, "-m", "dtype_lint", "server", "--debounce", "0.2")
    seen: dict = {}
    try:
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=project.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="project")],
        ))
        client.initialized(types.InitializedParams())
        path = project / "train.py"
        uri = path.as_uri()
        # Unsaved text: the file on disk is empty.
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)
        ))
        opened = await next_diagnostics()
        seen["opened"] = [(d.code, d.range.start.line, d.range.start.character) for d in opened.diagnostics]
        seen["shown"] = [(d.severity, d.message, d.code_description.href) for d in opened.diagnostics]
        diagnostic = opened.diagnostics[0]
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        ))
        seen["titles"] = [(a.kind, a.title) for a in actions]
        noqa = next(a for a in actions if a.title.startswith("Suppress"))
        seen["noqa"] = _apply(SOURCE, noqa.edit.document_changes[0].edits)
        fix_all = next(a for a in actions if a.kind.startswith("source.fixAll"))
        seen["fix_all"] = _apply(SOURCE, fix_all.edit.document_changes[0].edits)
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostic.range.start
        ))
        seen["hover"] = hover.contents.value
        # Apply the quick fix as an editor would: a change notification, then the debounced check.
        quick = next(a for a in actions if a.title.startswith("Fix: "))
        fixed = _apply(SOURCE, quick.edit.document_changes[0].edits)
        seen["fixed"] = fixed
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
        ))
        seen["after_fix"] = [(d.code, d.range.start.line) for d in (await next_diagnostics()).diagnostics]
        # Two quick edits: one check of the latest text (debounced), which has a new defect.
        for version, text in ((3, fixed + "x = 1\n"), (4, fixed + "late = torch.cuda.amp.autocast()\n")):
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            ))
        latest = await next_diagnostics()
        seen["after_edit"] = (latest.version, [(d.code, d.range.start.line) for d in latest.diagnostics])
        seen["extra"] = published.qsize()
        # A file that does not parse is the one Error: nothing else in it can be checked.
        broken = (project / "broken.py").as_uri()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=broken, language_id="python", version=1, text="def f(:\n")
        ))
        seen["broken"] = [(d.code, d.severity, d.code_description.href) for d in (await next_diagnostics()).diagnostics]
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    return seen


def test_server_diagnostics_code_actions_hover_and_updates(tmp_path):
    # The nearest pyproject.toml applies: DTL307 (a scaler never used) is left out by it, and the
    # project's torch (>= 2.4) has DTL201's replacement, so the fix is safe.
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\nselect = ["DTL001", "DTL2"]\ntarget-torch = "2.4"\n')
    (tmp_path / "train.py").write_text("")
    seen = asyncio.run(_session(tmp_path))
    assert seen["opened"] == [("DTL201", 4, 13)]
    # A high-confidence finding is a warning (as ruff's are); fixability shows as code actions, not
    # in the message; the code links to the rule's page.
    ((severity, message, href),) = seen["shown"]
    assert severity == types.DiagnosticSeverity.Warning
    assert message.startswith("`torch.cuda.amp.GradScaler") and not message.endswith("fix]"), message
    assert href == "https://github.com/dtype-lint/dtype-lint/blob/main/docs/rules/DTL201.md"
    assert seen["broken"] == [("DTL001", types.DiagnosticSeverity.Error, href.replace("DTL201", "DTL001"))]
    titles = [title for _, title in seen["titles"]]
    assert any(title.startswith("Fix: ") and "DTL201" in title for title in titles), titles
    assert "Suppress with # noqa: DTL201" in titles
    assert "    scaler = torch.cuda.amp.GradScaler()  # noqa: DTL201\n" in seen["noqa"]
    assert 'torch.amp.GradScaler("cuda")' in seen["fix_all"] and "cuda.amp" not in seen["fix_all"]
    assert "## What it does" in seen["hover"] and f"**[DTL201]({href})**" in seen["hover"]
    assert seen["fixed"] == seen["fix_all"]
    assert seen["after_fix"] == []
    assert seen["after_edit"] == (4, [("DTL201", 6)])
    assert seen["extra"] == 0  # the superseded edit (version 3) was never checked on its own


def test_static_path_never_imports_pygls():
    import subprocess

    code = (
        "import sys; from dtype_lint.cli import build_parser; build_parser(); import dtype_lint.engine; "
        "print('pygls' in sys.modules or 'lsprotocol' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr


def test_severity_follows_confidence_and_only_an_uncheckable_file_is_an_error():
    from dtype_lint.findings import Confidence, Finding
    from dtype_lint.lsp import convert

    def shown(code: str, confidence: Confidence) -> types.DiagnosticSeverity:
        finding = Finding(code=code, name="n", message="m", line=1, column=1, end_line=1, end_column=2, confidence=confidence)
        return convert.diagnostic(["x"], finding).severity

    assert shown("DTL101", Confidence.HIGH) == types.DiagnosticSeverity.Warning
    assert shown("DTL101", Confidence.MEDIUM) == types.DiagnosticSeverity.Information
    assert shown("DTL101", Confidence.LOW) == types.DiagnosticSeverity.Hint
    assert shown("DTL001", Confidence.HIGH) == types.DiagnosticSeverity.Error


def test_noqa_action_adds_to_an_existing_noqa_and_columns_count_utf16():
    from dtype_lint.config import Settings
    from dtype_lint.engine import check_text
    from dtype_lint.lsp import convert

    text = "import torch\nétiquette = torch.cuda.amp.GradScaler()  # noqa: DTL307\n"
    (finding,) = check_text(text, "t.py", Settings(select=("DTL201", "DTL307"))).findings
    lines = text.splitlines()
    edit = convert.noqa_edit(lines, finding)
    assert _apply(text.replace("é", "e"), [edit]).splitlines()[1].endswith("# noqa: DTL307, DTL201")
    assert convert.finding_range(lines, finding).start.character == 12
    assert convert.utf16_column("😀x", 2) == 2  # an astral character is two UTF-16 units


def test_without_pygls_the_server_command_is_a_one_line_error():
    import subprocess

    code = "import sys; sys.modules['pygls'] = None; from dtype_lint.cli import main; sys.exit(main(['server']))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == "dtype-lint: error: the server needs pygls: pip install 'dtype-lint[server]'\n"

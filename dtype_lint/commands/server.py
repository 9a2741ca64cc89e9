"""``dtype-lint server``: a language server (LSP over stdio) for editors; needs ``dtype-lint[server]``."""

from __future__ import annotations

import argparse

from dtype_lint.errors import UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debounce", type=float, default=0.3, help="seconds to wait after an edit before checking")


def run(args: argparse.Namespace) -> int:
    try:
        import pygls  # noqa: F401 - only this command needs it; the static path never imports it
    except ImportError:
        raise UsageError("the server needs pygls: pip install 'dtype-lint[server]'") from None
    from dtype_lint.lsp.server import serve

    serve(debounce=args.debounce)
    return 0

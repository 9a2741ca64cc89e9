"""The language server: findings -> LSP diagnostics, fixes -> code actions (``server.py``), and
the position and edit conversions it needs (``convert.py``). Imported only by ``dtype-lint server``."""

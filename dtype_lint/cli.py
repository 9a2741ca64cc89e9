"""``dtype-lint check | fix | rule | confirm``. Subcommands live in ``dtype_lint.commands``."""

from __future__ import annotations

import argparse
import importlib
import sys

from dtype_lint import __version__
from dtype_lint.errors import UsageError, describe

COMMANDS = {
    "check": ("dtype_lint.commands.check", "report precision bugs in Python files"),
    "fix": ("dtype_lint.commands.fix", "apply the fixes that findings carry"),
    "rule": ("dtype_lint.commands.rule", "print a rule's documentation"),
    "confirm": ("dtype_lint.commands.confirm", "run the program and confirm or refute findings"),
    "server": ("dtype_lint.commands.server", "language server for editors (LSP over stdio; dtype-lint[server])"),
}


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        # No abbreviations: `check --diff-b` or `--sel` must not silently mean a longer option.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # one line and exit 2, as argparse does, without the usage block
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dtype-lint", description="Find PyTorch precision bugs before the job runs.")
    parser.add_argument("--version", action="version", version=f"dtype-lint {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module_name, help_text) in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue  # a subcommand not built yet
        subparser = subparsers.add_parser(name, help=help_text, description=help_text)
        module.configure(subparser)
        subparser.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--version"]:  # fast path: no parser, no rules
        print(f"dtype-lint {__version__}")
        return 0
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "run", None) is None:
            parser.print_help(sys.stderr)
            return 2
        return args.run(args)
    except UsageError as error:
        from dtype_lint.printable import printable

        print(f"dtype-lint: error: {printable(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dtype-lint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as error:  # noqa: BLE001 - a bug of ours: one line and 2, never 1 ("findings")
        print(f"dtype-lint: internal error: {describe(error)}", file=sys.stderr)
        return 2

"""The `aiozarr` command line: one entry point, one module per command.

argparse (standard library) keeps the CLI free of extra dependencies; each command
module has `main(argv) -> int` and `build_parser(parser)`.
"""

from __future__ import annotations

import sys

import aiozarr
from aiozarr.cli import bench, cp, info, migrate, serve, tree
from aiozarr.cli.errors import reader_gone
from aiozarr.cli.options import Parser

COMMANDS = {
    "info": info,
    "tree": tree,
    "cp": cp,
    "migrate": migrate,
    "bench": bench,
    "serve": serve,
}


def top_parser() -> Parser:
    """The parser of `aiozarr` itself: `--version`, and the commands (each command's own
    arguments are its module's `build_parser`)."""
    parser = Parser(
        prog="aiozarr",
        description="Zarr arrays on object stores.",
        epilog="`aiozarr COMMAND --help` shows a command's arguments.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {aiozarr.__version__}",
        help="print the version",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        commands.add_parser(name, help=(module.__doc__ or "").splitlines()[0])
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the `aiozarr` command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        return COMMANDS[argv[0]].main(argv[1:])
    parser = top_parser()
    try:
        parser.parse_args(argv)
    except SystemExit as exit:  # --version and --help print, then exit 0
        return int(exit.code or 0)
    parser.print_help()
    return 2


def run() -> None:
    """The console entry point: `main()`, its output flushed, its code the exit status."""
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = reader_gone()
    sys.exit(code)


if __name__ == "__main__":
    run()

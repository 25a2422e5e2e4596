"""The command line every command shares: the parser, `--storage-option`, `--debug`,
the options of commands that move data, and argument types (`parse_shape`)."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

__all__ = [
    "Parser",
    "add_common",
    "add_snapshot_options",
    "add_transfer_options",
    "non_negative",
    "parse_shape",
    "positive",
    "with_snapshot",
]


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the problem and where to find help."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_common(parser: argparse.ArgumentParser) -> None:
    """`--storage-option KEY=VALUE` (repeatable) and `--debug`."""
    parser.add_argument(
        "-o",
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="store setting, e.g. endpoint=http://127.0.0.1:8000, region=us-west-2, "
        "anon=true, client_options.allow_http=true (values parse as JSON when they can)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")


def add_snapshot_options(parser: argparse.ArgumentParser) -> None:
    """`--branch`, `--tag`, `--snapshot`, `--as-of`: which snapshot of an icechunk
    repository."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--branch", help="icechunk repository: read this branch (default main)")
    group.add_argument("--tag", help="icechunk repository: read this tag")
    group.add_argument("--snapshot", help="icechunk repository: read this snapshot id")
    parser.add_argument(
        "--as-of",
        dest="as_of",
        metavar="TIME",
        help="icechunk repository (spec 2): the branch's snapshot newest at this ISO 8601 "
        "time (UTC unless it says otherwise)",
    )


def with_snapshot(
    args: argparse.Namespace, options: dict[str, Any] | None
) -> dict[str, Any] | None:
    """`options` with the snapshot `add_snapshot_options` named (which any path takes)."""
    names = ("branch", "tag", "snapshot", "as_of")
    named = {k: getattr(args, k) for k in names if getattr(args, k)}
    return {**(options or {}), **named} or None


def add_transfer_options(parser: argparse.ArgumentParser) -> None:
    """The options of commands that move data from SRC to DST (`cp`, `migrate`)."""
    parser.add_argument(
        "--dst-storage-option",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="store settings for DST only (default: the --storage-option ones)",
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "bar", "plain", "off"),
        default="auto",
        help="a bar on a terminal, log lines otherwise (auto)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_common(parser)


def positive(text: str) -> int:
    """An argument that is a count or a size greater than zero."""
    return _at_least(text, 1)


def non_negative(text: str) -> int:
    """An argument that is a count of zero or more."""
    return _at_least(text, 0)


def _at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected an integer of at least {low}, got {value}")
    return value


def parse_shape(text: str | None) -> tuple[int, ...] | None:
    """`"64,64"` -> `(64, 64)`."""
    if text is None:
        return None
    try:
        shape = tuple(int(part) for part in text.replace("x", ",").split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 64,64, got {text!r}") from None
    if not shape or any(s <= 0 for s in shape):
        raise argparse.ArgumentTypeError(f"expected positive integers like 64,64, got {text!r}")
    return shape

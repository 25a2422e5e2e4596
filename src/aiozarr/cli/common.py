"""What every command shares: the parser, `--storage-option`, `--debug`, errors, stores.

An error ends a command with one line on stderr (`aiozarr info: error: ...`) and exit
status 1 (2 for a bad command line); `--debug` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn
from urllib.parse import urlsplit

__all__ = [
    "Parser",
    "add_common",
    "is_local",
    "options_for",
    "parse_shape",
    "parse_storage_options",
    "run_command",
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


def transfer_storage_options(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """The store settings of SRC and of DST (DST's default to SRC's)."""
    options = parse_storage_options(args.storage_option)
    if args.dst_storage_option is None:
        return options, options
    return options, parse_storage_options(args.dst_storage_option)


def parse_storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    """`["a=1", "b.c=true"]` -> `{"a": 1, "b": {"c": True}}`; a dot nests."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--storage-option {pair!r}: expected KEY=VALUE")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        *parents, leaf = key.split(".")
        node = options
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = value
    return options


def is_local(url: str) -> bool:
    """Whether `url` names a local path (no scheme, `file://` or a drive letter)."""
    scheme = urlsplit(url).scheme
    return scheme in ("", "file") or len(scheme) == 1


def options_for(url: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """The storage options for `url`: none for local paths and `memory://`."""
    if is_local(url) or url.startswith("memory://"):
        return None
    return options or None


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


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, KeyError | OSError) and type(error).__module__ == "builtins":
        text = f"{type(error).__name__}: {text}"
    return text


def run_command(
    prog: str, args: argparse.Namespace, body: Callable[[], Awaitable[int | None]]
) -> int:
    """Run the coroutine `body()` and turn any failure into one line and status 1."""
    try:
        return asyncio.run(_call(body)) or 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if getattr(args, "debug", False) or os.environ.get("AIOZARR_DEBUG"):
            traceback.print_exc()
        else:
            print(f"{prog}: error: {_one_line(error)}", file=sys.stderr)
        return 1


async def _call(body: Callable[[], Awaitable[int | None]]) -> int | None:
    return await body()

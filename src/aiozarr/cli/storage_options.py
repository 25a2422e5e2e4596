"""Store settings from the command line: `--storage-option KEY=VALUE` pairs -> the
`storage_options` of a URL (none for local paths and `memory://`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

__all__ = ["is_local", "options_for", "parse_storage_options", "transfer_storage_options"]


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


def transfer_storage_options(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """The store settings of SRC and of DST (DST's default to SRC's)."""
    options = parse_storage_options(args.storage_option)
    if args.dst_storage_option is None:
        return options, options
    return options, parse_storage_options(args.dst_storage_option)


def is_local(url: str) -> bool:
    """Whether `url` names a local path (no scheme, `file://` or a drive letter)."""
    scheme = urlsplit(url).scheme
    return scheme in ("", "file") or len(scheme) == 1


def options_for(url: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """The storage options for `url`: none for local paths and `memory://`."""
    if is_local(url) or url.startswith("memory://"):
        return None
    return options or None

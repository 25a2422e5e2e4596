"""`aiozarr tree URL`: the hierarchy with shapes, dtypes, chunks and shards.

    aiozarr tree s3://bucket/data.zarr
    aiozarr tree ./data.zarr --json --depth 2

Consolidated metadata is used when the group has it (one request for the whole tree).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from aiozarr.cli.errors import run_command
from aiozarr.cli.options import (
    Parser,
    add_common,
    add_snapshot_options,
    non_negative,
    with_snapshot,
)
from aiozarr.cli.progress import printable
from aiozarr.cli.storage_options import options_for, parse_storage_options
from aiozarr.errors import AiozarrError, UnsupportedError
from aiozarr.metadata import formats
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.nodes import hierarchy
from aiozarr.nodes.description import describe_metadata

__all__ = ["build_parser", "main", "walk"]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The `tree` arguments, added to `parser` or a new parser."""
    parser = parser or Parser(
        prog="aiozarr tree", description="Show a hierarchy with shapes and dtypes."
    )
    parser.add_argument("url", help="path or URL of the group (or array)")
    parser.add_argument("--path", default="", help="node inside the store (default: its root)")
    parser.add_argument(
        "--depth", type=non_negative, default=None, help="levels to show (default: all)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_snapshot_options(parser)
    add_common(parser)
    return parser


async def walk(node: Any, depth: int | None = None) -> dict[str, Any]:
    """A node and its members as nested dicts (name, kind, shape, dtype, chunks, shards).

    The hierarchy is read level by level and assembled with a loop: any depth works. A
    member array whose codecs cannot be built here is shown from its metadata, with
    `problem` saying why, rather than failing the whole tree.
    """
    from aiozarr.nodes import hierarchy_walk
    from aiozarr.nodes.group import AsyncGroup

    top = _describe(node)
    if not isinstance(node, AsyncGroup) or (depth is not None and depth <= 0):
        return top
    groups = {"": top}  # entries of the groups whose members are still to come
    async for level in hierarchy_walk.levels(node.store, node.path, node.metadata, depth):
        for rel, found in level:
            parent = hierarchy_walk.under(node.path, rel)
            for name, meta in found.items():
                child = _describe_member(node.store, hierarchy.join(parent, name), meta)
                groups[rel]["members"].append(child)
                if "members" in child:
                    groups[f"{rel}/{name}" if rel else name] = child
    return top


def _describe_member(store: Any, path: str, meta: Any) -> dict[str, Any]:
    from aiozarr.nodes.array import AsyncArray
    from aiozarr.nodes.group import AsyncGroup

    if not isinstance(meta, ArrayMetadata):
        return _describe(AsyncGroup(store, path, meta))
    try:
        return _describe(AsyncArray(store, path, meta))
    except AiozarrError as error:
        name = path.rpartition("/")[2]
        described = describe_metadata(meta, name=name, store=repr(store), problem=str(error))
        return {**_array_entry(name, meta, described.to_json()), "problem": str(error)}


def _describe(node: Any) -> dict[str, Any]:
    """One node's entry, without its members."""
    from aiozarr.nodes.array import AsyncArray

    name = node.path.rpartition("/")[2] or "/"
    if isinstance(node, AsyncArray):
        return _array_entry(name, node.metadata, node.description.to_json())
    return {
        "name": name,
        "node": "group",
        "zarr_format": node.zarr_format,
        "format": formats.label(node.metadata),
        "members": [],
    }


def _array_entry(name: str, meta: ArrayMetadata, described: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "node": "array",
        "shape": described["shape"],
        "dtype": described["dtype"],
        "chunks": described["chunks"],
        "shards": described["shards"],
        "zarr_format": described["zarr_format"],
        "format": formats.label(meta),
    }


def _label(tree: dict[str, Any], top: bool) -> str:
    name = printable(tree["name"])
    if tree["node"] == "array":
        shards = f" shards {tuple(tree['shards'])}" if tree["shards"] else ""
        problem = f" (cannot read here: {tree['problem']})" if "problem" in tree else ""
        return (
            f"{name} {tuple(tree['shape'])} {tree['dtype']} "
            f"chunks {tuple(tree['chunks'])}{shards}{problem}"
        )
    return f"{name} ({tree['format']})" if top else f"{name}/"


def _lines(tree: dict[str, Any]) -> list[str]:
    """The tree drawn with box characters; an explicit stack, so any depth works."""
    lines = [_label(tree, top=True)]
    # (node, the prefix of its line, whether it is its parent's last member)
    stack = [(member, "", False) for member in reversed(tree.get("members", []))]
    if stack:
        stack[0] = (stack[0][0], "", True)
    while stack:
        node, prefix, last = stack.pop()
        lines.append(f"{prefix}{'└── ' if last else '├── '}{_label(node, top=False)}")
        members = node.get("members", [])
        inner = prefix + ("    " if last else "│   ")
        stack += [(member, inner, i == 0) for i, member in enumerate(reversed(members))]
    return lines


def _json(tree: dict[str, Any]) -> str:
    try:
        return json.dumps(tree, indent=2)
    except RecursionError:  # json nests one level per group, and encodes recursively
        raise UnsupportedError(
            "the hierarchy is nested too deeply for --json (whose members nest); "
            "leave out --json, or pass --depth"
        ) from None


def main(argv: list[str] | None = None) -> int:
    """Entry point of `aiozarr tree`; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)

    async def body() -> int:
        from aiozarr.api import open_async

        options = parse_storage_options(args.storage_option)
        options = with_snapshot(args, options_for(args.url, options))
        node = await open_async(args.url, args.path, mode="r", storage_options=options)
        tree = await walk(node, args.depth)
        print(_json(tree) if args.json else "\n".join(_lines(tree)))
        return 0

    return run_command(parser.prog, args, body)

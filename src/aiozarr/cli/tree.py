"""`aiozarr tree URL`: the hierarchy with shapes, dtypes, chunks and shards.

    aiozarr tree s3://bucket/data.zarr
    aiozarr tree ./data.zarr --json --depth 2

Consolidated metadata is used when the group has it (one request for the whole tree).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from aiozarr.cli.common import (
    Parser,
    add_common,
    grid_json,
    options_for,
    parse_storage_options,
    run_command,
)

__all__ = ["build_parser", "main", "walk"]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The `tree` arguments, added to `parser` or a new parser."""
    parser = parser or Parser(
        prog="aiozarr tree", description="Show a hierarchy with shapes and dtypes."
    )
    parser.add_argument("url", help="path or URL of the group (or array)")
    parser.add_argument("--path", default="", help="node inside the store (default: its root)")
    parser.add_argument("--depth", type=int, default=None, help="levels to show (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_common(parser)
    return parser


async def walk(node: Any, depth: int | None = None) -> dict[str, Any]:
    """A node and its members as nested dicts (name, kind, shape, dtype, chunks, shards)."""
    from aiozarr.array import AsyncArray

    name = node.path.rpartition("/")[2] or "/"
    if isinstance(node, AsyncArray):
        chunks, shards = grid_json(node)
        return {
            "name": name,
            "node": "array",
            "shape": list(node.shape),
            "dtype": str(node.dtype),
            "chunks": chunks,
            "shards": shards,
            "zarr_format": node.zarr_format,
        }
    out: dict[str, Any] = {
        "name": name,
        "node": "group",
        "zarr_format": node.zarr_format,
        "members": [],
    }
    if depth is not None and depth <= 0:
        return out
    members = [member async for _, member in node.members()]
    for member in sorted(members, key=lambda m: m.path):
        out["members"].append(await walk(member, None if depth is None else depth - 1))
    return out


def _lines(
    tree: dict[str, Any], prefix: str = "", last: bool = True, top: bool = True
) -> list[str]:
    if tree["node"] == "array":
        shards = f" shards {tuple(tree['shards'])}" if tree["shards"] else ""
        label = (
            f"{tree['name']} {tuple(tree['shape'])} {tree['dtype']} "
            f"chunks {tuple(tree['chunks'])}{shards}"
        )
    else:
        label = f"{tree['name']}/" if not top else f"{tree['name']} (Zarr v{tree['zarr_format']})"
    lines = [label if top else f"{prefix}{'└── ' if last else '├── '}{label}"]
    members = tree.get("members", [])
    child_prefix = "" if top else prefix + ("    " if last else "│   ")
    for i, member in enumerate(members):
        lines += _lines(member, child_prefix, i == len(members) - 1, top=False)
    return lines


def main(argv: list[str] | None = None) -> int:
    """Entry point of `aiozarr tree`; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)

    async def body() -> int:
        from aiozarr.api import open_async

        options = parse_storage_options(args.storage_option)
        node = await open_async(
            args.url, args.path, mode="r", storage_options=options_for(args.url, options)
        )
        tree = await walk(node, args.depth)
        print(json.dumps(tree, indent=2) if args.json else "\n".join(_lines(tree)))
        return 0

    return run_command(parser.prog, args, body)

"""`aiozarr info URL`: what an array or group is, and what it costs to store.

    aiozarr info s3://bucket/data.zarr -o region=us-west-2
    aiozarr info ./data.zarr --path temperature --json

Stored bytes come from one listing of the node's keys (with sizes), never from reading
chunks, so `info` stays cheap on a terabyte array.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

from aiozarr.cli.errors import run_command
from aiozarr.cli.options import Parser, add_common
from aiozarr.cli.progress import human_bytes
from aiozarr.cli.storage_options import is_local, options_for, parse_storage_options
from aiozarr.description import codecs_text
from aiozarr.errors import StoreError

__all__ = ["build_parser", "describe", "listed_sizes", "main"]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The `info` arguments, added to `parser` or a new parser."""
    parser = parser or Parser(
        prog="aiozarr info",
        description="Show an array's or group's metadata and stored size (from a listing).",
    )
    parser.add_argument("url", help="path or URL of the array or group (s3://, gs://, ...)")
    parser.add_argument("--path", default="", help="node inside the store (default: its root)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_common(parser)
    return parser


async def listed_sizes(store: Any, prefix: str) -> AsyncIterator[tuple[str, int]]:
    """(key, size) of every key under `prefix`, from a listing when the store gives sizes.

    ObjectStore: obstore's listing (sizes included); LocalStore: file sizes; MemoryStore:
    value sizes; other stores: one `getsize` per key.
    """
    from aiozarr.storage.local import LocalStore
    from aiozarr.storage.memory import MemoryStore
    from aiozarr.storage.object_store import ObjectStore

    if isinstance(store, ObjectStore) and store.listable:
        import obstore

        parent = prefix.rstrip("/") or None
        async for page in obstore.list(store.obstore, parent, chunk_size=1000):
            for meta in page:
                if meta["path"].startswith(prefix):
                    yield meta["path"], int(meta["size"])
        return
    if isinstance(store, LocalStore):
        keys = [key async for key in store.list_prefix(prefix)]
        sizes = await anyio.to_thread.run_sync(_file_sizes, store, keys)
        for key, size in zip(keys, sizes, strict=True):
            if size is not None:
                yield key, size
        return
    if isinstance(store, MemoryStore):
        for key, value in list(store.data.items()):
            if key.startswith(prefix):
                yield key, memoryview(value).nbytes
        return
    async for key in store.list_prefix(prefix):
        size = await store.getsize(key)
        if size is not None:
            yield key, size


def _file_sizes(store: Any, keys: list[str]) -> list[int | None]:
    """Each key's file size in a LocalStore: None when it is gone (deleted since the
    listing, a dangling symlink); `StoreError` naming the key when it cannot be read
    (a symlink loop, no permission)."""
    root: Path = store.root
    sizes: list[int | None] = []
    for key in keys:
        try:
            sizes.append(os.stat(root / key).st_size)
        except FileNotFoundError:
            sizes.append(None)
        except OSError as error:
            raise StoreError(f"cannot stat {key!r} in {store!r}: {error}") from error
    return sizes


async def describe(node: Any) -> dict[str, Any]:
    """Everything `info` shows about an AsyncArray or AsyncGroup, JSON-ready."""
    from aiozarr.array import AsyncArray

    prefix = f"{node.path}/" if node.path else ""
    objects: int | None = None
    stored: int | None = None
    if node.store.listable:  # plain HTTP cannot list: sizes unknown
        objects = stored = 0
        async for _key, size in listed_sizes(node.store, prefix):
            objects += 1
            stored += size
    info: dict[str, Any] = {
        "node": "array" if isinstance(node, AsyncArray) else "group",
        "name": node.name,
        "store": repr(node.store),
        "zarr_format": node.zarr_format,
        "attributes": {k: v for k, v in node.attrs.items()},
        "stored_objects": objects,
        "stored_bytes": stored,
    }
    if not isinstance(node, AsyncArray):
        members = [name async for name, _ in node.members()]
        info["members"] = sorted(members)
        return info
    # The array's own facts; the keys above keep their places, the others follow.
    info.update(node.description.to_json())
    info["compression_ratio"] = round(node.nbytes / stored, 3) if stored else None
    return info


def _stored(info: dict[str, Any]) -> str:
    if info["stored_bytes"] is None:
        return "unknown (the store cannot list)"
    return f"{human_bytes(info['stored_bytes'])} in {info['stored_objects']} objects"


def _table(info: dict[str, Any]) -> str:
    rows: list[tuple[str, str]] = [
        ("Type", f"{info['node']} (Zarr v{info['zarr_format']})"),
        ("Name", info["name"]),
        ("Store", info["store"]),
    ]
    if info["node"] == "array":
        grid = info["grid"]
        unit = "shards" if info["shards"] else "chunks"
        rows += [
            ("Shape", " x ".join(map(str, info["shape"])) or "()"),
            ("Data type", info["dtype"]),
            ("Chunk shape", " x ".join(map(str, info["chunks"]))),
            ("Shard shape", " x ".join(map(str, info["shards"])) if info["shards"] else "-"),
            ("Grid", f"{' x '.join(map(str, grid))} = {math.prod(grid)} {unit}"),
            ("Codecs", codecs_text(info["codecs"])),
            ("Fill value", repr(info["fill_value"])),
            ("Dimension names", ", ".join(map(str, info["dimension_names"] or [])) or "-"),
            ("Decoded size", human_bytes(info["decoded_bytes"])),
        ]
        ratio = info["compression_ratio"]
        suffix = f" (ratio {ratio:.2f})" if ratio else ""
        rows.append(("Stored size", _stored(info) + suffix))
    else:
        rows += [
            ("Members", ", ".join(info["members"]) or "-"),
            ("Stored size", _stored(info)),
        ]
    attrs = json.dumps(info["attributes"], default=str)
    rows.append(("Attributes", attrs if len(attrs) < 200 else attrs[:197] + "..."))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}} : {v}" for k, v in rows)


def _last_segment(url: str) -> str:
    """The last segment of the path `url` names: never its query (a presigned URL's
    signature) nor its userinfo (a password)."""
    if is_local(url):
        path = url
    else:
        parts = urlsplit(url)
        path = parts.path.rstrip("/") or parts.netloc.rpartition("@")[2]
    return path.rstrip("/").rpartition("/")[2] or "/"


def main(argv: list[str] | None = None) -> int:
    """Entry point of `aiozarr info`; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)

    async def body() -> int:
        from aiozarr.api import open_async

        options = parse_storage_options(args.storage_option)
        node = await open_async(
            args.url, args.path, mode="r", storage_options=options_for(args.url, options)
        )
        info = await describe(node)
        if not node.path:  # the URL names the node: show its last segment, not "/"
            info["name"] = _last_segment(args.url)
        print(json.dumps(info, indent=2, default=str) if args.json else _table(info))
        return 0

    return run_command(parser.prog, args, body)

"""`aiozarr info URL`: what an array or group is, and what it costs to store.

    aiozarr info s3://bucket/data.zarr -o region=us-west-2
    aiozarr info ./data.zarr --path temperature --json

Stored bytes come from one listing of the node's keys (with sizes), never from reading
chunks, so `info` stays cheap on a terabyte array. An array is shown as its
`ArrayDescription` renders itself (`arr.info` shows the same rows); one whose codecs
cannot be built here (a codec package missing) is described from its metadata, with a
line saying what to install. `--json` prints strict JSON: a NaN or infinity in the
attributes comes as the string Zarr writes for such a fill value ("NaN", "Infinity").
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
from aiozarr.cli.options import Parser, add_common, add_snapshot_options, with_snapshot
from aiozarr.cli.progress import human_bytes, plural, printable
from aiozarr.cli.storage_options import is_local, options_for, parse_storage_options
from aiozarr.errors import StoreError, UnsupportedError
from aiozarr.metadata import formats
from aiozarr.nodes.description import ArrayDescription, describe_metadata, render_rows

__all__ = [
    "build_parser",
    "describe",
    "describe_unreadable",
    "listed_sizes",
    "main",
    "strict_json",
]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The `info` arguments, added to `parser` or a new parser."""
    parser = parser or Parser(
        prog="aiozarr info",
        description="Show an array's or group's metadata and stored size (from a listing).",
    )
    parser.add_argument("url", help="path or URL of the array or group (s3://, gs://, ...)")
    parser.add_argument("--path", default="", help="node inside the store (default: its root)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_snapshot_options(parser)
    add_common(parser)
    return parser


async def listed_sizes(store: Any, prefix: str) -> AsyncIterator[tuple[str, int]]:
    """(key, size) of every key under `prefix`, from a listing when the store gives sizes.

    ObjectStore: obstore's listing (sizes included); LocalStore: file sizes; MemoryStore:
    value sizes; other stores: one `getsize` per key.
    """
    from aiozarr.storage.backends.local import LocalStore
    from aiozarr.storage.backends.memory import MemoryStore
    from aiozarr.storage.backends.object_store import ObjectStore

    if isinstance(store, ObjectStore) and store.listable:
        async for key, size in store.list_sizes(prefix):
            yield key, size
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


async def _stored(store: Any, path: str) -> tuple[int | None, int | None]:
    """(objects, bytes) stored under the node at `path`: None, None when the store
    cannot list (plain HTTP)."""
    if not store.listable:
        return None, None
    objects = stored = 0
    async for _key, size in listed_sizes(store, f"{path}/" if path else ""):
        objects += 1
        stored += size
    return objects, stored


async def describe(node: Any) -> dict[str, Any]:
    """Everything `info` shows about an AsyncArray or AsyncGroup, JSON-ready."""
    from aiozarr.nodes.array import AsyncArray

    objects, stored = await _stored(node.store, node.path)
    info: dict[str, Any] = {
        "node": "array" if isinstance(node, AsyncArray) else "group",
        "name": node.name,
        "store": repr(node.store),
        "zarr_format": node.zarr_format,
        "format": formats.label(node.metadata),
        "attributes": {k: v for k, v in node.attrs.items()},
        "stored_objects": objects,
        "stored_bytes": stored,
    }
    if not isinstance(node, AsyncArray):
        members = [name async for name, _ in node.members()]
        info["members"] = sorted(members)
        return info
    return _array_info(info, node.description)


async def describe_unreadable(
    store: Any, path: str, problem: UnsupportedError
) -> tuple[dict[str, Any], ArrayDescription] | None:
    """What `describe` shows of the array at `path` that cannot be opened here (its
    codecs cannot be built: a package missing), from its metadata alone, with
    `problem` as the reason, and its description; None when there is no array there to
    describe."""
    from aiozarr.metadata.model import ArrayMetadata
    from aiozarr.nodes import hierarchy

    path = hierarchy.normalize_path(path)
    try:
        meta = await hierarchy.read_node(store, path)
    except UnsupportedError:
        return None  # the metadata itself cannot be read
    if not isinstance(meta, ArrayMetadata):
        return None
    name = "/" + path
    described = describe_metadata(meta, name=name, store=repr(store), problem=str(problem))
    objects, stored = await _stored(store, path)
    info: dict[str, Any] = {
        "node": "array",
        "name": name,
        "store": repr(store),
        "zarr_format": meta.zarr_format,
        "format": formats.label(meta),
        "attributes": dict(meta.attributes),
        "stored_objects": objects,
        "stored_bytes": stored,
    }
    return _array_info(info, described), described


def _array_info(info: dict[str, Any], described: ArrayDescription) -> dict[str, Any]:
    """`info` with the array's description; the keys already there keep their places."""
    info.update(described.to_json())
    stored = info["stored_bytes"]
    info["compression_ratio"] = round(described.decoded_bytes / stored, 3) if stored else None
    return info


def strict_json(value: Any) -> Any:
    """`value` with each NaN and infinity, at any depth, as the string Zarr writes for a
    fill value ("NaN", "Infinity", "-Infinity"): JSON bare NaN is not, which strict
    parsers (jq, JSON.parse) refuse."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(item) for item in value]
    return value


def _stored_text(info: dict[str, Any]) -> str:
    if info["stored_bytes"] is None:
        return "unknown (the store cannot list)"
    return f"{human_bytes(info['stored_bytes'])} in {plural(info['stored_objects'], 'object')}"


def _table(info: dict[str, Any], described: ArrayDescription | None) -> str:
    """An array's description rows (as `arr.info` shows them), or a group's, then the
    stored size and the attributes."""
    if described is not None:
        rows = described.rows()
        rows[1] = ("Name", printable(info["name"]))  # the node the URL names (its last segment)
        ratio = info["compression_ratio"]
        suffix = f" (ratio {ratio:.2f})" if ratio else ""
        rows.insert(
            -1 if described.problem else len(rows), ("Stored size", _stored_text(info) + suffix)
        )
    else:
        rows = [
            ("Type", f"Group ({info['format']})"),
            ("Name", printable(info["name"])),
            ("Store", info["store"]),
            ("Members", ", ".join(map(printable, info["members"])) or "None"),
            ("Stored size", _stored_text(info)),
        ]
    attrs = json.dumps(info["attributes"], default=str)
    rows.append(("Attributes", attrs if len(attrs) < 200 else attrs[:197] + "..."))
    return render_rows(rows)


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
        from aiozarr.api import open_async, resolve_store
        from aiozarr.nodes.array import AsyncArray

        options = options_for(args.url, parse_storage_options(args.storage_option))
        options = with_snapshot(args, options)
        try:
            node = await open_async(args.url, args.path, mode="r", storage_options=options)
        except UnsupportedError as error:  # a codec it cannot build: show what it can
            store = resolve_store(args.url, mode="r", storage_options=options)
            found = await describe_unreadable(store, args.path, error)
            if found is None:
                raise
            info, described = found
        else:
            info = await describe(node)
            described = node.description if isinstance(node, AsyncArray) else None
        if info["name"] == "/":  # the URL names the node: show its last segment, not "/"
            info["name"] = _last_segment(args.url)
        if args.json:  # strict JSON: attributes may hold NaN
            print(json.dumps(strict_json(info), indent=2, default=str, allow_nan=False))
        else:
            print(_table(info, described))
        return 0

    return run_command(parser.prog, args, body)

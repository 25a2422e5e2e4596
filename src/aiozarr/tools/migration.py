"""`migrate`: rewrite a Zarr v1 array, or a 2020-draft, v2 or v3 array or hierarchy, as
Zarr v2 or v3.

    await migrate_async("old.zarr", "new.zarr", zarr_format=3, consolidate=True)

A group is migrated whole: its attributes, then every member, arrays and subgroups,
recursively (v1 has no groups: a v1 source is one array). Chunks keep their grid and are
copied as stored bytes whenever the target can describe the same encoding: always for v2
targets (v1, draft and v2 chunks are all "compressor(ordered array)"), and for v3 targets
when the compressor is gzip, blosc, zstd or none and the only filter is the variable-length
string codec (F order becomes a `transpose` codec, byte order the `bytes` codec's endian).
Anything else is decoded and re-encoded on the codec pool. Either way the chunks move in
batches: one `get_partial_values` for up to `_BATCH` chunks (of any arrays), one
concurrent `set_many` for their new keys, a few batches in flight, under
`max_inflight_bytes`. Chunks the source does not store are not asked for when the store
can list. Metadata is written last, the root's document after every other, so a migration
killed part way never looks complete.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import anyio

from aiozarr import config
from aiozarr.api import StoreLike, resolve_store
from aiozarr.codecs import CodecChain
from aiozarr.codecs.blosc import is_legacy_zstd
from aiozarr.engine.entry import ChunkMove, move_chunks
from aiozarr.errors import InvalidValueError, UnsupportedError, unwrap_group
from aiozarr.metadata import conversions
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding, CodecMetadata, GroupMetadata
from aiozarr.metadata.v3draft import is_draft
from aiozarr.nodes import hierarchy, placement, stored_size
from aiozarr.nodes.array import AsyncArray
from aiozarr.nodes.group import AsyncGroup, walk
from aiozarr.sizes import ceil_div
from aiozarr.storage.backends.zip import ZipStore
from aiozarr.storage.protocol import Store
from aiozarr.sync import Array, Group, run
from aiozarr.tools.consolidate import consolidate_metadata_async, unlist_async

__all__ = ["MigrateProgress", "migrate", "migrate_async", "target_metadata"]

_BATCH = 256  # chunks fetched with one get_partial_values
_WORKERS = 4  # batches in flight at once


@dataclasses.dataclass(frozen=True)
class MigrateProgress:
    """Where a migration stands; the last snapshot is its summary.

    Chunks and decoded bytes count stored chunks only (missing chunks are not moved).
    `chunks_copied` moved as stored bytes, `chunks_reencoded` were decoded and encoded.
    """

    path: str
    chunks_done: int
    chunks_total: int
    bytes_done: int
    bytes_total: int
    arrays: int
    groups: int
    chunks_copied: int = 0
    chunks_reencoded: int = 0


#: Called with a `MigrateProgress` snapshot after each batch of chunks (and once at the end).
MigrateProgressCallback = Callable[[MigrateProgress], None]


# -- metadata ---------------------------------------------------------------------------------


def _final_codec(doc: Mapping[str, Any], itemsize: int) -> CodecMetadata:
    """A built codec's metadata with blosc's `typesize` spelled out (it was optional once)."""
    name, config = doc["name"], dict(doc.get("configuration", {}))
    if name == "blosc" and config.get("typesize") is None:
        config["typesize"] = itemsize
    elif name == "sharding_indexed":
        for field in ("codecs", "index_codecs"):
            config[field] = [_final_codec(c, itemsize).to_json() for c in config[field]]
    return CodecMetadata(name, config)


def target_metadata(
    src: ArrayMetadata, zarr_format: Literal[2, 3], where: str = ""
) -> tuple[ArrayMetadata, bool]:
    """The metadata of the migrated array, and whether stored chunk bytes carry over."""
    where = where or "array"
    if zarr_format == 2:
        if src.zarr_format == 3:
            raise UnsupportedError(
                f"{where} is a Zarr v3 array: convert it with aiozarr.copy(..., zarr_format=2) "
                "(aiozarr cp --zarr-format 2)"
            )
        return conversions.v2_array(src), True
    if src.zarr_format == 3:  # rewritten as the v3.0 spec spells it (older writers' quirks)
        docs = CodecChain.from_metadata(src, where).to_metadata()
        codecs = tuple(_final_codec(doc, src.dtype.itemsize) for doc in docs)
        return dataclasses.replace(src, codecs=codecs, chunk_key_encoding=ChunkKeyEncoding()), True
    return conversions.v3_array(src, where)


# -- planning ---------------------------------------------------------------------------------


@dataclasses.dataclass
class _Job:
    """One array: source, target, how its chunks move, and which chunks the source stores."""

    src: AsyncArray
    dst: AsyncArray
    copyable: bool
    coords: list[tuple[int, ...]] = dataclasses.field(default_factory=list)

    @property
    def chunk_nbytes(self) -> int:
        return max(1, math.prod(self.src.metadata.chunk_shape) * self.src.dtype.itemsize)

    def region_nbytes(self, coords: tuple[int, ...]) -> int:
        meta = self.src.metadata
        sizes = (
            min(c, s - i * c) for i, c, s in zip(coords, meta.chunk_shape, meta.shape, strict=True)
        )
        return math.prod(sizes) * self.src.dtype.itemsize

    def keeps_bytes(self, data: Any) -> bool:
        """Whether a stored chunk moves as it is: the target reads the same encoding, and
        it is not a blosc frame of zstd 0.7 (zarr 1.x wrote them), which other readers
        cannot decompress, so it is re-encoded instead."""
        legacy = (self.src.metadata.compressor or {}).get("id") == "blosc"
        return self.copyable and not (legacy and is_legacy_zstd(data))


async def _stored_coords(array: AsyncArray) -> list[tuple[int, ...]]:
    """The grid coordinates of the chunks `array` stores: parsed from one listing, else
    the grid's positions whose keys are listed (every one where the store cannot list)."""
    meta = array.metadata
    prefix = hierarchy.chunk_prefix(array.path, meta)
    coords = await stored_size.listed_object_coords(array.store, prefix, meta)
    if coords is not None:
        return coords
    # unlistable, or keys of a layout not parsed: the whole grid
    grid = [ceil_div(s, c) for s, c in zip(meta.shape, meta.chunk_shape, strict=True)]
    every = list(itertools.product(*(range(n) for n in grid)))
    if not array.store.listable or not every:
        return every
    keys = {key async for key in array.store.list_prefix(prefix)}
    return [c for c in every if array.chunk_key(c) in keys]


# -- moving chunks ----------------------------------------------------------------------------


class _Mover:
    """Moves the chunks of every job in batches; counts for progress."""

    def __init__(
        self,
        jobs: Sequence[_Job],
        source: Store,
        target: Store,
        progress: MigrateProgressCallback | None,
        max_inflight_bytes: int,
        groups: int,
    ) -> None:
        self.jobs = jobs
        self.source = source
        self.target = target
        self.progress = progress
        self.budget = max(1, max_inflight_bytes // _WORKERS)
        self.state = MigrateProgress(
            path="",
            chunks_done=0,
            chunks_total=sum(len(j.coords) for j in jobs),
            bytes_done=0,
            bytes_total=sum(j.region_nbytes(c) for j in jobs for c in j.coords),
            arrays=len(jobs),
            groups=groups,
        )

    def _batches(self) -> Iterator[list[tuple[_Job, tuple[int, ...]]]]:
        batch: list[tuple[_Job, tuple[int, ...]]] = []
        held = 0
        for job in self.jobs:
            for coords in job.coords:
                if batch and (len(batch) >= _BATCH or held + job.chunk_nbytes > self.budget):
                    yield batch
                    batch, held = [], 0
                batch.append((job, coords))
                held += job.chunk_nbytes
        if batch:
            yield batch

    async def run(self) -> MigrateProgress:
        batches = self._batches()  # shared by the workers: each takes the next batch

        async def worker() -> None:
            for batch in batches:
                await self._move(batch)

        with unwrap_group():
            async with anyio.create_task_group() as tg:
                for _ in range(_WORKERS):
                    tg.start_soon(worker)
        return self.state

    async def _move(self, batch: list[tuple[_Job, tuple[int, ...]]]) -> None:
        moves = [
            ChunkMove(
                source_key=job.src.chunk_key(coords),
                target_key=job.dst.chunk_key(coords),
                source_chain=job.src.codec_chain,
                target_chain=job.dst.codec_chain,
                keeps_bytes=job.keeps_bytes,
                nbytes=job.chunk_nbytes,
            )
            for job, coords in batch
        ]
        moved = await move_chunks(self.source, self.target, moves)
        state = self.state
        self.state = dataclasses.replace(
            state,
            path=batch[-1][0].dst.name,
            chunks_done=state.chunks_done + len(batch),
            bytes_done=state.bytes_done + sum(job.region_nbytes(c) for job, c in batch),
            chunks_copied=state.chunks_copied + moved.copied,
            chunks_reencoded=state.chunks_reencoded + moved.reencoded,
        )
        if self.progress is not None:
            self.progress(self.state)


# -- the entry points -------------------------------------------------------------------------


async def migrate_async(
    src: StoreLike,
    dst: StoreLike,
    *,
    src_path: str = "",
    dst_path: str = "",
    zarr_format: Literal[2, 3] = 3,
    overwrite: bool = False,
    consolidate: bool | None = None,
    storage_options: Mapping[str, Any] | None = None,
    dst_storage_options: Mapping[str, Any] | None = None,
    progress: MigrateProgressCallback | None = None,
    max_inflight_bytes: int | None = None,
) -> AsyncArray | AsyncGroup:
    """Rewrite the array or group at `src`/`src_path` as Zarr `zarr_format` at `dst`/`dst_path`.

    Sync twin: `migrate`. Returns the new array or group. A group brings its attributes and
    every member, recursively. `overwrite` replaces a node already at the destination.
    `consolidate`: write consolidated metadata for a migrated group (None: when the source
    group has it). `progress(MigrateProgress)` is called after each batch of chunks.
    """
    if zarr_format not in (2, 3):
        raise InvalidValueError(f"zarr_format must be 2 or 3, got {zarr_format!r}")
    source = resolve_store(src, mode="r", storage_options=storage_options)
    dst_options = storage_options if dst_storage_options is None else dst_storage_options
    target = resolve_store(dst, mode="a", storage_options=dst_options)
    src_path, dst_path = hierarchy.normalize_path(src_path), hierarchy.normalize_path(dst_path)
    if hierarchy.overlapping(source, src_path, target, dst_path):
        raise InvalidValueError(
            f"cannot migrate {src_path or '/'!r} of {source!r} onto itself or a node inside "
            f"it ({dst_path or '/'!r}): migrate to another path or store"
        )
    root_meta, nodes, was_consolidated = await _source_nodes(source, src_path)
    jobs, docs = _plan_targets(nodes, target, dst_path, zarr_format)
    held = await _make_room(target, dst_path, zarr_format, overwrite=overwrite)
    await _list_stored_chunks(jobs)
    mover = _Mover(
        jobs,
        source,
        target,
        progress,
        max_inflight_bytes or config.get().max_inflight_bytes,
        len(nodes) - len(jobs),
    )
    state = await mover.run()
    await target.set_many(docs.items())
    if isinstance(root_meta, ArrayMetadata):
        await hierarchy.write_node(target, dst_path, jobs[0].dst.metadata)
        result: AsyncArray | AsyncGroup = jobs[0].dst
    else:
        consolidated = bool(consolidate or (consolidate is None and was_consolidated))
        result = await _write_root_group(target, dst_path, zarr_format, root_meta, consolidated)
    for group in held[1:] if held[:1] == [dst_path] else held:  # the root's is rewritten
        await consolidate_metadata_async(target, group)
    if isinstance(target, ZipStore) and target is not dst:
        target.close()  # an archive opened here is finished here (its central directory)
    if progress is not None:
        progress(dataclasses.replace(state, path="/" + dst_path))
    return result


async def _make_room(
    target: Store, dst_path: str, zarr_format: int, *, overwrite: bool
) -> list[str]:
    """Prepare `dst_path` for the migrated node (`placement.prepare_node`); the groups
    whose snapshots listed the nodes it replaces (`unlist_async`), to consolidate again
    once it is written."""
    held = await unlist_async(target, dst_path) if overwrite else []
    await placement.prepare_node(target, dst_path, zarr_format, overwrite=overwrite)
    if not overwrite:
        await placement.refuse_leftovers(
            target,
            dst_path,
            "the chunks of an interrupted migration? Migrate with overwrite to replace them",
        )
    return held


async def _source_nodes(
    source: Store, src_path: str
) -> tuple[ArrayMetadata | GroupMetadata, list[tuple[str, AsyncArray | AsyncGroup]], bool]:
    """The source's root metadata, its nodes (relative path, node; the root first) and
    whether it was a consolidated group. A group's members are listed, not taken from its
    consolidated metadata, which may be stale."""
    root_meta = await hierarchy.read_node(source, src_path)
    if isinstance(root_meta, ArrayMetadata):
        return root_meta, [("", AsyncArray(source, src_path, root_meta))], False
    was_consolidated = root_meta.consolidated is not None and not is_draft(root_meta)
    root = AsyncGroup(source, src_path, root_meta)
    members = [item async for item in walk(root, as_stored=True)]
    return root_meta, [("", root), *members], was_consolidated


def _plan_targets(
    nodes: list[tuple[str, AsyncArray | AsyncGroup]],
    target: Store,
    dst_path: str,
    zarr_format: Literal[2, 3],
) -> tuple[list[_Job], dict[str, bytes]]:
    """One job per array and the metadata documents of every node below the root.

    Every target's metadata is built (and its codecs and names checked) before anything
    is written.
    """
    jobs: list[_Job] = []
    docs: dict[str, bytes] = {}
    for rel, node in nodes:
        path = hierarchy.join(dst_path, rel)
        hierarchy.check_node_path(path)
        if isinstance(node, AsyncArray):
            meta, copyable = target_metadata(node.metadata, zarr_format, node.name)
            jobs.append(_Job(node, AsyncArray(target, path, meta), copyable))
        else:
            meta = GroupMetadata(zarr_format=zarr_format, attributes=dict(node.attrs))
        if rel:
            docs.update(hierarchy.node_documents(path, meta))
    return jobs, docs


async def _list_stored_chunks(jobs: list[_Job]) -> None:
    """Each job's stored chunk coordinates, listed concurrently."""

    async def list_chunks(job: _Job) -> None:
        job.coords = await _stored_coords(job.src)

    with unwrap_group():
        async with anyio.create_task_group() as tg:
            for job in jobs:
                tg.start_soon(list_chunks, job)


async def _write_root_group(
    target: Store,
    dst_path: str,
    zarr_format: Literal[2, 3],
    root_meta: GroupMetadata,
    consolidate: bool,
) -> AsyncGroup:
    """The root group's metadata, written last, then consolidated if asked."""
    group_meta = GroupMetadata(zarr_format=zarr_format, attributes=dict(root_meta.attributes))
    await hierarchy.write_node(target, dst_path, group_meta)
    result = AsyncGroup(target, dst_path, group_meta)
    if consolidate:
        result = await consolidate_metadata_async(target, dst_path)
    return result


def migrate(src: StoreLike, dst: StoreLike, **options: Any) -> Array | Group:
    """Rewrite an array or hierarchy as Zarr v2 or v3, for blocking use; returns the new
    `Array` or `Group`.

    Takes the arguments of `migrate_async` (`src_path`, `dst_path`, `zarr_format`,
    `overwrite`, `consolidate`, `storage_options`, `dst_storage_options`, `progress`,
    `max_inflight_bytes`), which documents them.
    """
    node = run(migrate_async, src, dst, **options)
    return Array(node) if isinstance(node, AsyncArray) else Group(node)

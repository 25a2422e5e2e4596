"""Copy an array or a hierarchy between stores, shard by shard, optionally converting.

    await copy_async("s3://old/data.zarr", "s3://new/data.zarr", zarr_format=3,
                     shards=(512, 512), codec="zstd:5", resume=True)

The unit of work is one stored object of the destination: a shard when it is sharded,
else a chunk. Each unit is read from the source (`getitem` of its region), then written
with one request (`setitem` of the same region), so a unit is either fully written or
not there; a few units are in flight at once, bounded by `max_inflight_bytes`. With
`resume`, a unit already at the destination is read back and compared with the source's
values: equal units are skipped (no write), so a copy that was killed finishes where it
stopped without rewriting what it verified.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import anyio
import numpy as np

from aiozarr import config
from aiozarr.api import StoreLike, resolve_store
from aiozarr.codecs.registry import get_codec
from aiozarr.errors import InvalidValueError, MetadataError, NodeNotFoundError, unwrap_group
from aiozarr.metadata import conversions
from aiozarr.metadata.fill_value import is_fill
from aiozarr.metadata.v3draft import is_draft
from aiozarr.nodes import hierarchy, stored_size
from aiozarr.nodes.array import AsyncArray
from aiozarr.nodes.group import AsyncGroup, walk
from aiozarr.selection.chunk_grid import grid_counts, object_region, objects_covering
from aiozarr.storage.backends.zip import ZipStore
from aiozarr.storage.protocol import Store
from aiozarr.storage.references.icechunk import IcechunkStore, probe_repository
from aiozarr.sync import run
from aiozarr.tools.consolidate import consolidate_metadata_async, unlist_async
from aiozarr.tools.copy_targets import make_group, make_target

__all__ = ["CopyProgress", "CopyReport", "copy", "copy_async", "parse_codec"]


@dataclasses.dataclass(frozen=True)
class CopyProgress:
    """Where a copy stands: units (shards, or chunks when unsharded) and decoded bytes.

    `chunks_skipped` counts units found already copied and verified (`resume`).
    """

    path: str
    chunks_done: int
    chunks_total: int
    bytes_done: int
    bytes_total: int
    chunks_skipped: int = 0


#: Called with a `CopyProgress` snapshot after each unit is finished.
CopyProgressCallback = Callable[[CopyProgress], None]


@dataclasses.dataclass
class CopyReport:
    """What a copy did, counted in units (a destination shard, or a chunk when unsharded).

    `chunks_written`: units written that store an object; `chunks_empty`: units written
    that store none, all fill value (unless the `write_empty_chunks` setting is on);
    `chunks_skipped`: units found already copied and verified (`resume`). `bytes_copied`:
    the decoded size of every unit's values (skipped ones too), not the bytes stored.
    """

    arrays: int = 0
    groups: int = 0
    chunks_written: int = 0
    chunks_skipped: int = 0
    bytes_copied: int = 0
    seconds: float = 0.0
    chunks_empty: int = 0


_Region = tuple[tuple[int, ...], tuple[slice, ...]]  # grid coordinates, array region


@dataclasses.dataclass(frozen=True)
class _Job:
    """One array to copy: source, destination, and its units."""

    src: AsyncArray
    dst: AsyncArray
    regions: Sequence[_Region]
    nbytes: int
    left: tuple[int, int] = (0, 0)  # units not read (fill values only), and their bytes
    unfinished: bool = True  # its documents are written once its units are


def parse_codec(spec: str, zarr_format: int, itemsize: int = 1) -> list[Any]:
    """The compressors for `spec`: "zstd:5", "gzip:6", "blosc:lz4:5", "none".

    Returns v3 codec dicts for `zarr_format` 3, numcodecs configs for 2. Settings no codec
    takes (a zstd level of 99, blosc's "nope") are refused here, before a copy creates
    anything.
    """
    for codec in _compressors(spec, 3, itemsize):
        try:
            get_codec(codec)
        except MetadataError as error:
            raise InvalidValueError(f"codec {spec!r}: {error}") from None
    return _compressors(spec, zarr_format, itemsize)


# The settings each compressor of `--codec` takes after its name (more is refused).
_CODEC_ARGS = {"none": 0, "": 0, "zstd": 1, "gzip": 1, "blosc": 2}


def _compressors(spec: str, zarr_format: int, itemsize: int) -> list[Any]:
    name, _, rest = spec.strip().lower().partition(":")
    args = [a for a in rest.split(":") if a]
    try:
        if len(args) > _CODEC_ARGS.get(name, 0):
            raise ValueError(spec)  # a setting no compressor takes (`zstd:5:9`), not dropped
        if name in ("none", ""):
            return []
        if name == "zstd":
            level = int(args[0]) if args else 0
            if zarr_format == 2:
                return [{"id": "zstd", "level": level}]
            return [{"name": "zstd", "configuration": {"level": level, "checksum": False}}]
        if name == "gzip":
            level = int(args[0]) if args else 5
            if zarr_format == 2:
                return [{"id": "gzip", "level": level}]
            return [{"name": "gzip", "configuration": {"level": level}}]
        if name == "blosc":
            cname = args[0] if args else "zstd"
            clevel = int(args[1]) if len(args) > 1 else 5
            if zarr_format == 2:
                return [
                    {"id": "blosc", "cname": cname, "clevel": clevel, "shuffle": 1, "blocksize": 0}
                ]
            return [
                {
                    "name": "blosc",
                    "configuration": {
                        "cname": cname,
                        "clevel": clevel,
                        "shuffle": "shuffle",
                        "typesize": itemsize,
                        "blocksize": 0,
                    },
                }
            ]
    except ValueError:
        pass
    raise InvalidValueError(
        f"codec {spec!r}: expected zstd[:LEVEL], gzip[:LEVEL], blosc[:CNAME[:LEVEL]] or none"
    )


def _shape_option(
    value: Sequence[int] | None, name: str, src: AsyncArray
) -> tuple[int, ...] | None:
    if value is None:
        return None
    shape = tuple(int(v) for v in value)
    if len(shape) != src.ndim:
        raise InvalidValueError(
            f"{name} {shape} has {len(shape)} dimensions, array {src.name} has {src.ndim}"
        )
    return shape


def target_options(
    src: AsyncArray,
    *,
    zarr_format: int | None = None,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | Literal[False] | None = None,
    codec: str | None = None,
) -> dict[str, Any] | None:
    """`create_array` options for the copy of `src`; None: copy the metadata as it is."""
    fmt = zarr_format or src.zarr_format
    meta = src.metadata
    new_chunks = _shape_option(chunks, "chunks", src)
    new_shards = None if shards is False else _shape_option(shards, "shards", src)
    as_is = new_chunks is None and shards is None and codec is None
    if fmt == meta.zarr_format and as_is and not is_draft(meta):  # a draft is not written
        return None
    if fmt not in (2, 3):
        raise InvalidValueError(f"zarr_format must be 2 or 3, got {fmt}")
    if fmt == 2 and new_shards is not None:
        raise InvalidValueError("shards need zarr_format 3 (Zarr v2 has no sharding)")
    src_chunks, src_shards = _source_grid(src)
    if shards is None and fmt == 3:
        new_shards = _kept_shards(src, src_shards, new_chunks)
    options: dict[str, Any] = {
        "shape": src.shape,
        "dtype": src.dtype,
        "chunks": new_chunks or src_chunks,
        "shards": new_shards,
        "zarr_format": fmt,
        "fill_value": meta.fill_value,
        "attributes": dict(meta.attributes),
        "dimension_names": meta.dimension_names,
    }
    options.update(
        conversions.create_options(meta, fmt, sharded=new_shards is not None, where=src.name)
    )
    if codec is not None:
        options["compressors"] = parse_codec(codec, fmt, src.dtype.itemsize)
    return options


def _kept_shards(src: AsyncArray, shards: Any, chunks: tuple[int, ...] | None) -> Any:
    """The source's shards, kept where only the inner chunks change and they divide them
    (a copy that gives new chunks does not silently drop the sharding)."""
    if chunks is None or shards is None:
        return shards
    if isinstance(shards, tuple) and all(s % c == 0 for s, c in zip(shards, chunks, strict=True)):
        return shards
    raise InvalidValueError(
        f"chunks {chunks} do not divide the shards of array {src.name} "
        f"({src.metadata.chunk_shape}): give shards that are multiples of them "
        "(--shards), or shards=False (--shards none) to write it unsharded"
    )


def _source_grid(src: AsyncArray) -> tuple[Any, Any]:
    """`create_array`'s `chunks` and `shards` that repeat the grid of `src`."""
    grid = src.rectilinear_grid
    if grid is None:
        return src.chunks, src.shards
    if not src.is_sharded:
        return grid, None
    return src.chunks, grid


def _regions(dst: AsyncArray, only: Iterable[tuple[int, ...]] | None = None) -> list[_Region]:
    """Grid coordinates and array region of the stored objects of `dst` at `only` (every
    one when None)."""
    grid = dst.metadata.grid
    coords = np.ndindex(*grid_counts(dst.shape, grid)) if only is None else only
    return [(c, object_region(grid, c, dst.shape)) for c in coords]


async def _job(src: AsyncArray, dst: AsyncArray, *, resume: bool) -> _Job:
    """The units of `dst` to copy from `src`: where the source lists its objects, fill
    values agree and a unit of fill values stores nothing, only those its stored objects
    overlap (the others are counted as left out); every unit otherwise."""
    fills = [a.metadata.fill_value for a in (src, dst)]
    sparse = not resume and not config.get().write_empty_chunks and None not in fills
    prefix = hierarchy.chunk_prefix(src.path, src.metadata)
    stored = (
        await stored_size.listed_object_coords(src.store, prefix, src.metadata) if sparse else None
    )
    if stored is None or not _all_fill(np.full(1, fills[0], dtype=src.dtype), dst):
        return _Job(src, dst, _regions(dst), src.nbytes)
    covering = sorted(
        {c for s in stored for c in objects_covering(dst.metadata.grid, _source_region(src, s))}
    )
    regions = _regions(dst, covering)
    read = sum(math.prod(r.stop - r.start for r in region) for _, region in regions)
    total = math.prod(grid_counts(dst.shape, dst.metadata.grid))
    left = (total - len(regions), src.nbytes - read * src.dtype.itemsize)
    return _Job(src, dst, regions, src.nbytes, left)


def _source_region(src: AsyncArray, coords: tuple[int, ...]) -> tuple[slice, ...]:
    return object_region(src.metadata.grid, coords, src.shape)


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether `b` holds `a`'s bytes (in `a`'s dtype; objects: the same values), so a
    skipped write loses nothing, not even a -0.0 or a NaN payload."""
    if a.shape != b.shape:
        return False
    if a.dtype.hasobject or b.dtype.hasobject:
        return bool(np.array_equal(a, b))
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b, dtype=a.dtype).tobytes()


def _all_fill(data: np.ndarray, dst: AsyncArray) -> bool:
    """Whether a unit would be stored as nothing at `dst`: its bytes are the fill's."""
    return is_fill(np.asarray(data, dtype=dst.dtype), dst.metadata.fill_value)


async def _existing_keys(dst: AsyncArray) -> set[str]:
    prefix = f"{dst.path}/" if dst.path else ""
    return {key async for key in dst.store.list_prefix(prefix)}


def _stores(
    src: StoreLike,
    dst: StoreLike,
    options: Mapping[str, Any] | None,
    dst_options: Mapping[str, Any] | None,
) -> tuple[Store, Store]:
    """The source's store, read-only, and the destination's (its own options, else the
    source's)."""
    src_store = resolve_store(src, mode="r", storage_options=options)
    dst_store = resolve_store(
        dst, mode="a", storage_options=options if dst_options is None else dst_options
    )
    return src_store, dst_store


def _check_apart(src: Store, src_path: str, dst: Store, dst_path: str, *, overwrite: bool) -> None:
    """Refuse to copy onto the source, into it or onto a node holding it: overwriting
    deletes the destination before anything is read; otherwise the copy writes into
    the hierarchy it is reading (resuming, over the source's own arrays)."""
    if not hierarchy.overlapping(src, src_path, dst, dst_path):
        return
    why = (
        "overwriting would delete what is being copied"
        if overwrite
        else "the copy would write into what it is reading"
    )
    raise InvalidValueError(
        f"cannot copy {src_path or '/'!r} of {src!r}{' with overwrite' if overwrite else ''} "
        f"onto itself, a node inside it or one holding it ({dst_path or '/'!r} of {dst!r}): "
        f"{why}; copy to another path or store"
    )


def _one_of(*, resume: bool, overwrite: bool) -> None:
    """Refuse `resume` with `overwrite`: one keeps what is at the destination, the other
    deletes it."""
    if resume and overwrite:
        raise InvalidValueError(
            "resume and overwrite exclude each other: resume keeps what is at the "
            "destination and copies what is missing or differs; overwrite deletes it first"
        )


async def copy_async(
    src: StoreLike,
    dst: StoreLike,
    *,
    src_path: str = "",
    dst_path: str = "",
    zarr_format: int | None = None,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | Literal[False] | None = None,
    codec: str | None = None,
    resume: bool = False,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    dst_storage_options: Mapping[str, Any] | None = None,
    progress: CopyProgressCallback | None = None,
    max_inflight_bytes: int | None = None,
) -> CopyReport:
    """Copy the array or group at `src`/`src_path` to `dst`/`dst_path`. Sync twin: `copy`.

    `zarr_format`, `chunks` (inner chunks when sharded: a sharded array keeps its shards
    where they divide them), `shards` (False: unsharded) and `codec` ("zstd:5") convert
    on the way; without them each array keeps its metadata exactly. `resume`
    keeps what is already at the destination and skips units whose stored values equal
    the source's; `overwrite` replaces existing nodes. `progress(CopyProgress)` is called
    after each unit. Decoded bytes in flight stay near `max_inflight_bytes` (config's
    value by default), at least one unit. Groups above `dst_path` holding consolidated
    metadata are consolidated again at the end, resuming or overwriting.
    """
    started = time.perf_counter()
    _one_of(resume=resume, overwrite=overwrite)
    if codec is not None:
        parse_codec(codec, zarr_format or 3)  # refused before anything is created
    src_store, dst_store = _stores(src, dst, storage_options, dst_storage_options)
    _check_apart(src_store, src_path, dst_store, dst_path, overwrite=overwrite)
    report = CopyReport()
    root = await _open_source(src, src_store, src_path, storage_options)
    held = await unlist_async(dst_store, dst_path) if resume or overwrite else []
    conversion = {"zarr_format": zarr_format, "chunks": chunks, "shards": shards, "codec": codec}
    jobs = await _create_targets(
        root,
        dst_store,
        dst_path,
        report,
        conversion,
        zarr_format=zarr_format,
        resume=resume,
        overwrite=overwrite,
    )
    await _copy_units(
        jobs,
        report,
        resume=resume,
        progress=progress,
        max_inflight_bytes=max_inflight_bytes or config.get().max_inflight_bytes,
    )
    await _consolidate(root, dst_store, dst_path, held)
    if isinstance(dst_store, ZipStore) and dst_store is not dst:
        dst_store.close()  # an archive opened here is finished here (its central directory)
    report.seconds = time.perf_counter() - started
    return report


async def _consolidate(
    root: AsyncArray | AsyncGroup, store: Store, path: str, held: list[str]
) -> None:
    """Consolidate the copy of a consolidated group, then the groups that held the
    copy's nodes in their snapshots (`unlist_async`; nearest first)."""
    if isinstance(root, AsyncGroup) and root.metadata.consolidated is not None:
        await consolidate_metadata_async(store, path)
    for group in held:
        await consolidate_metadata_async(store, group)


async def _create_targets(
    root: AsyncArray | AsyncGroup,
    dst_store: Store,
    dst_path: str,
    report: CopyReport,
    conversion: Mapping[str, Any],
    *,
    zarr_format: int | None,
    resume: bool,
    overwrite: bool,
) -> list[_Job]:
    """Create every destination group and array, in the source's order, counting them in
    `report`; one job (the units to copy) per array. `conversion` holds `target_options`'
    keywords. The source's groups are listed, as stored: their consolidated metadata may
    be stale."""
    jobs: list[_Job] = []
    planned: dict[str, dict[str, Any] | None] = {}  # every array's, refused before any write

    async def add_array(node: AsyncArray, path: str) -> None:
        target, unfinished = await make_target(
            node,
            dst_store,
            path,
            planned[path],
            resume=resume,
            overwrite=overwrite,
        )
        job = await _job(node, target, resume=resume)
        jobs.append(dataclasses.replace(job, unfinished=unfinished))
        report.arrays += 1

    if isinstance(root, AsyncArray):
        planned[dst_path] = target_options(root, **conversion)
        await add_array(root, dst_path)
        return jobs
    fmt = zarr_format or root.zarr_format
    # listed as stored (never a stale snapshot), and every name checked before any write
    nodes = [item async for item in walk(root, hierarchy.normalize_path(dst_path), as_stored=True)]
    for path, node in nodes:
        hierarchy.check_node_path(path)
        if isinstance(node, AsyncArray):
            planned[path] = target_options(node, **conversion)
    await make_group(root, dst_store, dst_path, fmt, resume=resume, overwrite=overwrite)
    report.groups += 1
    for path, node in nodes:
        if isinstance(node, AsyncArray):
            await add_array(node, path)
        else:
            await make_group(node, dst_store, path, fmt, resume=resume, overwrite=False)
            report.groups += 1
    return jobs


async def _open_source(
    src: StoreLike, store: Store, path: str, options: Mapping[str, Any] | None
) -> AsyncArray | AsyncGroup:
    """The node at `path` of `store`; where there is none, the one in the icechunk
    repository at remote URL `src`, at the ref `options` name (main by default), as
    `aiozarr.open` finds it."""
    try:
        return await _open(store, path)
    except NodeNotFoundError:
        if isinstance(store, IcechunkStore):
            raise
        repository = await probe_repository(src, options)
        if repository is None:
            raise
    return await _open(repository, path)


async def _open(store: Store, path: str) -> AsyncArray | AsyncGroup:
    try:
        return await AsyncArray.open(store, path)
    except NodeNotFoundError:
        return await AsyncGroup.open(store, path)


async def _copy_units(
    jobs: Sequence[_Job],
    report: CopyReport,
    *,
    resume: bool,
    progress: CopyProgressCallback | None,
    max_inflight_bytes: int,
) -> None:
    """Copy every job's units, one array after another, each by as many workers as
    `max_inflight_bytes` allows (1 to 16), counting in `report` and calling `progress`."""
    chunks_total = sum(len(job.regions) + job.left[0] for job in jobs)
    bytes_total = sum(job.nbytes for job in jobs)
    empty_stored = config.get().write_empty_chunks
    done = 0

    def tell(job: _Job) -> None:
        if progress is not None:
            counts = (done, chunks_total, report.bytes_copied, bytes_total)
            progress(CopyProgress(job.dst.name, *counts, report.chunks_skipped))

    for job in jobs:
        existing = await _existing_keys(job.dst) if resume else set()
        unit_bytes = max(math.prod(job.dst.metadata.chunk_shape) * job.dst.dtype.itemsize, 1)
        # Each unit holds its decoded values (and, resuming, the stored ones) at once.
        workers = max(1, min(16, max_inflight_bytes // unit_bytes))
        units = iter(job.regions)  # shared by the workers: each takes the next unit

        async def worker(job: _Job, units: Iterator[_Region], existing: set[str]) -> None:
            nonlocal done
            for coords, region in units:
                data, skip = await _copy_unit(job, coords, region, existing, resume=resume)
                if skip:
                    report.chunks_skipped += 1
                elif empty_stored or not _all_fill(data, job.dst):
                    report.chunks_written += 1
                else:  # written as nothing: the engine stores no object of fill values
                    report.chunks_empty += 1
                report.bytes_copied += data.nbytes
                done += 1
                tell(job)

        with unwrap_group():
            async with anyio.create_task_group() as tg:
                for _ in range(min(workers, len(job.regions))):
                    tg.start_soon(worker, job, units, existing)
        if job.left[0]:  # units of fill values, never read: written as nothing
            report.chunks_empty += job.left[0]
            report.bytes_copied += job.left[1]
            done += job.left[0]
            tell(job)
        if job.unfinished:  # every unit is written: readers may open the array now
            await hierarchy.finish_node(job.dst.store, job.dst.path, job.dst.metadata)


async def _copy_unit(
    job: _Job,
    coords: tuple[int, ...],
    region: tuple[slice, ...],
    existing: set[str],
    *,
    resume: bool,
) -> tuple[np.ndarray, bool]:
    """Copy one unit: its source values, and whether it was skipped. Resuming, a unit is
    skipped when the destination holds equal values, or (not stored yet) when it is all
    fill value."""
    data = np.asarray(await job.src.getitem(region))
    skip = False
    if resume:
        if job.dst.chunk_key(coords) in existing:
            skip = _equal(np.asarray(await job.dst.getitem(region)), data)
        else:
            skip = _all_fill(data, job.dst)
    if not skip:
        await job.dst.setitem(region, data)
    return data, skip


def copy(src: StoreLike, dst: StoreLike, **options: Any) -> CopyReport:
    """Copy an array or group between stores, for blocking use; returns a `CopyReport`.

    Takes the arguments of `copy_async` (`src_path`, `dst_path`, `zarr_format`, `chunks`,
    `shards`, `codec`, `resume`, `overwrite`, `storage_options`, `dst_storage_options`,
    `progress`, `max_inflight_bytes`), which documents them.
    """
    return run(copy_async, src, dst, **options)

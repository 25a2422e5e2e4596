"""`aiozarr.zarr.CodecPipeline`: zarr-python's reads and writes run by aiozarr's engine.

    zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"})

zarr-python builds one pipeline per array (`from_array_metadata_and_store`) and hands it
each selection as a batch of (chunk or shard key, spec, chunk selection, output
selection). Where aiozarr can address the store (`pipeline_stores.py`) and read the
array's metadata and codecs, the batch becomes aiozarr chunk projections
(`pipeline_plan.py`) run by the engine as one read: every shard index the batch needs in
one round, every inner-chunk range in the next, coalesced, each decoded on the codec pool
straight into zarr-python's output buffer. Writes go through the engine's
read-modify-write the same way (locks, conditional writes where the store has them).

Anything else falls back to zarr-python's own `BatchedCodecPipeline`, per batch: an unknown
store, a codec or data type aiozarr does not know, a spec or selection of a form it does
not expect, buffers that are not numpy's. Such a batch is read (or written) exactly as
without this pipeline. `from_codecs` (what zarr-python's sharding codec asks for its inner
chunks) gives the default pipeline itself.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from zarr.abc.codec import CodecPipeline as ZarrCodecPipeline
from zarr.core.codec_pipeline import BatchedCodecPipeline
from zarr.registry import register_pipeline

from aiozarr import config
from aiozarr.engine import entry as engine
from aiozarr.engine.entry import StoredArray
from aiozarr.errors import ConditionalWriteUnsupportedError, unwrap_group
from aiozarr.selection.indexing import ChunkProjection
from aiozarr.storage.backends.zarr_store import ZarrStore
from aiozarr.storage.protocol import Store
from aiozarr.zarr import pipeline_plan
from aiozarr.zarr.pipeline_array import (
    AiozarrArray,
    aiozarr_array,
    default_pipeline,
    holds,
    same_fill,
    subchunk_write_order,
)
from aiozarr.zarr.pipeline_stores import aiozarr_store_for
from aiozarr.zarr.store import ReadOnlyStoreError

if TYPE_CHECKING:
    from zarr.abc.codec import Codec
    from zarr.abc.store import ByteGetter, ByteSetter
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, NDBuffer
    from zarr.core.chunk_grids import ChunkGrid
    from zarr.core.dtype.wrapper import TBaseDType, TBaseScalar, ZDType
    from zarr.core.metadata import ArrayMetadata as ZarrArrayMetadata

__all__ = ["CodecPipeline"]

#: Why batches fell back to zarr-python's pipeline (debug lines, one per batch).
log = logging.getLogger("aiozarr.zarr")

#: One zarr-python item: (byte getter or setter, spec, chunk selection, output
#: selection, whether it is a complete chunk).
Item = tuple[Any, "ArraySpec", Any, Any, bool]
#: What a read says of each item: zarr-python 3.4's `GetResult`s.
Results = tuple[dict[str, str], ...]


@dataclass(frozen=True, slots=True)
class _Plan:
    """A batch as the engine runs it: the array (store, prefix, codecs, index cache)
    and one projection per inner chunk."""

    array: StoredArray
    projections: list[ChunkProjection]


class CodecPipeline(ZarrCodecPipeline):
    """A zarr-python codec pipeline that reads and writes through aiozarr's engine,
    and through zarr-python's default pipeline where aiozarr cannot."""

    # Named where zarr-python's config names it (`aiozarr.zarr.CodecPipeline`), which
    # is also where pickle finds it.
    __module__ = "aiozarr.zarr"

    def __init__(self, default: BatchedCodecPipeline, metadata: ZarrArrayMetadata) -> None:
        self._default = default
        self._metadata = metadata
        # aiozarr's view of the array (or why there is none), made on the first batch
        self._aiozarr: AiozarrArray | str | None = None
        # the arrays read so far, by store and prefix: their shard index caches
        self._arrays: dict[tuple[int, str], StoredArray] = {}

    # -- construction ------------------------------------------------------------------

    @classmethod
    def from_array_metadata_and_store(
        cls, array_metadata: ZarrArrayMetadata, store: Any
    ) -> CodecPipeline:
        """The pipeline of one array (zarr-python calls this when it opens one)."""
        return cls(default_pipeline(array_metadata), array_metadata)

    @classmethod
    def from_codecs(cls, codecs: Iterable[Codec]) -> BatchedCodecPipeline:  # type: ignore[override]
        """Codecs alone (no array, no store: a sharding codec's inner chunks) are
        zarr-python's default pipeline."""
        return BatchedCodecPipeline.from_codecs(codecs)

    def evolve_from_array_spec(self, array_spec: ArraySpec) -> CodecPipeline:
        return type(self)(self._default.evolve_from_array_spec(array_spec), self._metadata)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._default, self._metadata))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, CodecPipeline)
            and self._default == other._default
            and self._metadata == other._metadata
        )

    def __hash__(self) -> int:
        return hash((CodecPipeline, self._default))

    def __repr__(self) -> str:
        return f"aiozarr.zarr.CodecPipeline({list(self._default)!r})"

    # -- what zarr-python asks of every pipeline: the default pipeline's answers ---------

    def __iter__(self) -> Iterator[Codec]:
        return iter(self._default)

    @property
    def supports_partial_decode(self) -> bool:
        return self._default.supports_partial_decode

    @property
    def supports_partial_encode(self) -> bool:
        return self._default.supports_partial_encode

    def validate(
        self,
        *,
        shape: tuple[int, ...],
        dtype: ZDType[TBaseDType, TBaseScalar],
        chunk_grid: ChunkGrid,
    ) -> None:
        self._default.validate(shape=shape, dtype=dtype, chunk_grid=chunk_grid)

    def compute_encoded_size(self, byte_length: int, array_spec: ArraySpec) -> int:
        return self._default.compute_encoded_size(byte_length, array_spec)

    async def decode(
        self, chunk_bytes_and_specs: Iterable[tuple[Buffer | None, ArraySpec]]
    ) -> Iterable[NDBuffer | None]:
        return await self._default.decode(chunk_bytes_and_specs)

    async def encode(
        self, chunk_arrays_and_specs: Iterable[tuple[NDBuffer | None, ArraySpec]]
    ) -> Iterable[Buffer | None]:
        return await self._default.encode(chunk_arrays_and_specs)

    # -- reads and writes ----------------------------------------------------------------

    async def read(
        self,
        batch_info: Iterable[tuple[ByteGetter, ArraySpec, Any, Any, bool]],
        out: NDBuffer,
        drop_axes: tuple[int, ...] = (),
    ) -> Results | None:
        """Read a batch into `out`: through aiozarr's engine where it can, else through
        zarr-python's default pipeline. Returns, per item, whether its chunk or shard
        is stored (`{"status": "present"}` or `"missing"`): zarr-python 3.4 raises
        `ChunkNotFoundError` on a missing one where the array says so."""
        batch = list(batch_info)
        target = _numpy_of(out)
        if target is not None and not target.flags.writeable:
            target = None  # zarr-python's own pipeline says what is wrong
        plan = None if target is None else self._plan(batch, target, drop_axes)
        if plan is None or target is None:
            return await self._default.read(batch, out, drop_axes)  # type: ignore[func-returns-value]
        # zarr-python's fresh output, paged as aiozarr pages its own (engine/output.py)
        missing = await engine.read(plan.array, plan.projections, engine.small_pages(target))
        return tuple(
            {"status": "missing" if item[0].path in missing else "present"} for item in batch
        )

    async def write(
        self,
        batch_info: Iterable[tuple[ByteSetter, ArraySpec, Any, Any, bool]],
        value: NDBuffer,
        drop_axes: tuple[int, ...] = (),
    ) -> None:
        """Write a batch of `value`: through aiozarr's engine (read-modify-write of
        partly written chunks and shards) where it can, else through zarr-python's."""
        batch = list(batch_info)
        source = _numpy_of(value)
        if source is not None and source.ndim == 0:
            shape = pipeline_plan.bounding_shape([item[3] for item in batch])
            source = None if shape is None else np.broadcast_to(source, shape)
        plan = None if source is None else self._plan(batch, source, drop_axes)
        if plan is None or source is None:
            self._forget_indexes(batch)
            await self._default.write(batch, value, drop_axes)
            return
        if plan.array.store.read_only:  # as zarr-python's stores refuse it: a ValueError
            raise ReadOnlyStoreError(
                f"cannot write {batch[0][0].path!r}: the store was opened in read-only mode "
                f"and does not support writing ({batch[0][0].store!r})"
            )
        write_empty = bool(batch[0][1].config.write_empty_chunks)
        try:
            with config.set(write_empty_chunks=write_empty), unwrap_group():
                if plan.projections:
                    await engine.write(plan.array, plan.projections, source)
        except ConditionalWriteUnsupportedError as error:  # raised before any write
            log.debug("write falls back to zarr-python's pipeline: %s", error)
            await self._default.write(batch, value, drop_axes)

    # -- planning ------------------------------------------------------------------------

    def _plan(
        self, batch: list[Item], target: np.ndarray, drop_axes: tuple[int, ...]
    ) -> _Plan | None:
        """The batch as engine projections, or None (logged) where it falls back."""
        if not batch:
            return None
        why = self._why_not(batch[0], target)
        if why is None:
            array, why = self._array_for(batch[0][0])
            if array is not None:
                plan, why = _projections(array, batch, target.ndim, drop_axes)
                if plan is not None:
                    return _Plan(array, plan)
        log.debug("batch of %d falls back to zarr-python's pipeline: %s", len(batch), why)
        return None

    def _why_not(self, first: Item, target: np.ndarray) -> str | None:
        """Why the batch cannot go through the engine (from its first item and the
        buffer), or None when it may."""
        found = self._resolved()
        if isinstance(found, str):
            return found
        dtype = found.meta.dtype
        if not holds(target.dtype, found.meta):
            return f"buffer of {target.dtype}, array of {dtype}"
        if not same_fill(first[1].fill_value, found.meta.fill_value, dtype):
            return f"fill value {first[1].fill_value!r} of the chunk spec is not the array's"
        return None

    def _resolved(self) -> AiozarrArray | str:
        if self._aiozarr is None:
            self._aiozarr = aiozarr_array(self._metadata, subchunk_write_order(self._default))
        return self._aiozarr

    def _array_for(self, getter: Any) -> tuple[StoredArray | None, str]:
        """The array read through the aiozarr store behind `getter`'s zarr store."""
        found = self._resolved()
        assert isinstance(found, AiozarrArray)
        zarr_store = getattr(getter, "store", None)
        path = getattr(getter, "path", None)
        if zarr_store is None or not isinstance(path, str):
            return None, f"{type(getter).__name__} is not a path in a store"
        store = aiozarr_store_for(zarr_store)
        if store is None:
            return None, f"store {type(zarr_store).__name__} is not one aiozarr reads"
        split = pipeline_plan.chunk_coords(found.meta, path)
        if split is None:
            return None, f"{path!r} is not a chunk key of the array"
        key = (id(store), split[0])
        array = self._arrays.get(key)
        if array is None or array.store is not store:
            # No chunk cache: zarr-python writes some batches itself, unseen by aiozarr.
            no_cache = engine.CacheSettings(0, False)
            array = engine.stored_array(store, split[0], found.meta, found.chain, no_cache)
            if _tells_versions(store):
                self._arrays[key] = array
            # else: a fresh index cache for every batch (see _tells_versions)
        return array, ""

    def _forget_indexes(self, batch: list[Item]) -> None:
        """Forget the cached indexes of shards a write leaves to zarr-python."""
        for array in self._arrays.values():
            for item in batch:
                path = getattr(item[0], "path", None)
                if isinstance(path, str):
                    array.index_cache.invalidate(path)


def _tells_versions(store: Store) -> bool:
    """Whether the store's reads carry versions, so that an index cached across batches
    is checked against the shard it is used with. zarr's stores read through the adapter
    carry none: a shard rewritten by another array object would be read with its old
    index, so those batches start with an empty cache."""
    return not isinstance(store, ZarrStore)


def _projections(
    array: StoredArray, batch: list[Item], out_ndim: int, drop_axes: tuple[int, ...]
) -> tuple[list[ChunkProjection] | None, str]:
    """The engine's projections of `batch` (None and why, where it cannot run it).

    An item of an unsharded array that zarr-python calls complete covers its chunk's part
    inside the array (a chunk at the far edge included): its projection says so, so that
    a write starts from the fill value, as zarr-python's does, rather than keep the
    stored chunk's values past the edge. (A sharded array's inner chunks zarr-python
    merges into, keeping their cells past the edge: its projections say what they cover
    of the shard.)
    """
    store = getattr(batch[0][0], "store", None)
    found: list[ChunkProjection] = []
    for getter, spec, chunk_selection, out_selection, complete in batch:
        if getattr(getter, "store", None) is not store:
            return None, "items of the batch in different stores"
        split = pipeline_plan.chunk_coords(array.meta, getter.path)
        if split is None or array.prefix + array.meta.chunk_key(split[1]) != getter.path:
            return None, f"{getter.path!r} is not a chunk key of the array"
        grid, origin = _object_grid(array, split[1])
        if tuple(spec.shape) != grid.outer:
            return None, f"chunk spec of shape {spec.shape}, chunk of {grid.outer}"
        projections = pipeline_plan.projections(
            grid, split[1], chunk_selection, out_selection, drop_axes, out_ndim, origin
        )
        if projections is None:
            return None, f"selection {chunk_selection!r} -> {out_selection!r}"
        if complete and array.layout is None and len(projections) == 1:
            projections = [replace(projections[0], covers_chunk_in_array=True)]
        found.extend(projections)
    return found, ""


def _object_grid(
    array: StoredArray, coords: tuple[int, ...]
) -> tuple[pipeline_plan.Grid, tuple[int, ...] | None]:
    """The grid of the stored object at `coords` (its shape, the inner chunks read in
    it) and, on a rectilinear grid, the read-grid coordinates of its first inner chunk."""
    layout = array.layout
    rectilinear = array.rectilinear
    if rectilinear is None:
        outer = array.meta.chunk_shape
        return pipeline_plan.Grid(outer, outer if layout is None else layout.chunk_shape), None
    shape = rectilinear.chunk_shape(coords)
    if layout is None:
        return pipeline_plan.Grid(shape, shape), coords
    inner = layout.chunk_shape
    origin = tuple(
        int(axis.start_of(c)) // n
        for axis, c, n in zip(rectilinear.axes, coords, inner, strict=True)
    )
    return pipeline_plan.Grid(shape, inner), origin


def _numpy_of(buffer: Any) -> np.ndarray | None:
    """The numpy array a zarr `NDBuffer` holds (None: another kind, e.g. on a GPU)."""
    try:
        data = buffer.as_ndarray_like()
    except Exception:
        return None
    return data if type(data) is np.ndarray else None


register_pipeline(CodecPipeline)

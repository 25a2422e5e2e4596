"""The one record a read carries from its plan to its decoding: a chunk located in the store.

A `LocatedChunk` says where a chunk's bytes are (an object, or a byte range of one that a
shard index gave), how to decode them and where its values go. What a read fetches is
either such a chunk or a `WholeShard`: a shard needed in full whose index is not known
yet, fetched as one object, whose chunks are located in its own bytes once it lands
("expand after fetch"). Both answer `key` (the object), `request()` (what to ask the
store), `size` (the bytes to expect, for the byte budget) and `expand(...)` (the landed
bytes as located chunks and their data; None: the fill value).

`plan_reads` (pure) turns a selection into what to fetch at once and the shards whose
index must be read first; `locate` (pure) turns those shards and their indexes into
located chunks. The async read and the inline read share all of it; only how they fetch
differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from aiozarr.byte_range import ByteRange
from aiozarr.codecs import CodecChain, ShardIndex, ShardLayout
from aiozarr.engine.chunk_parts import ChunkPart, part_of
from aiozarr.engine.located_index import (
    LocatedIndex,
    StaleIndexError,
    cached_index,
    check_version,
    remember_index,
)
from aiozarr.engine.plan import ShardSelection, plan_chunks, plan_shards
from aiozarr.engine.stored_array import StoredArray
from aiozarr.errors import ValueTooLargeError
from aiozarr.selection.indexing import ChunkProjection
from aiozarr.storage.protocol import Buffer, RangeRequest, Version, stored_size

#: A located chunk and its bytes (None: not stored, it reads as the fill value).
Landed = tuple["LocatedChunk", Buffer | None]


def chunk_bound(chain: CodecChain, unbounded: int) -> int:
    """The largest value a chunk of `chain` can be stored as: its codecs' bound;
    `unbounded` where the data decides (variable-length types)."""
    most = chain.max_encoded_size()
    return unbounded if most is None else most


def shard_bound(layout: ShardLayout, unbounded: int) -> int:
    """The largest value a shard of `layout` can be stored as (see `chunk_bound`)."""
    most = layout.max_stored_bytes
    return unbounded if most is None else most


@dataclass(frozen=True, slots=True)
class LocatedChunk:
    """One chunk located in the store: bytes `byte_range` of object `key` (None: the
    whole object), decoded by `chain` into `projection` of the output. `index` is the
    shard index that gave the range: the bytes must come from its version of the shard.
    With a `part`, `byte_range` is that part's span of the chunk, and only it is read."""

    key: str
    byte_range: ByteRange | None
    chain: CodecChain
    projection: ChunkProjection
    index: LocatedIndex | None = None
    part: ChunkPart | None = None  # only this part of the chunk is read (`chunk_parts`)

    def request(self, unbounded: int) -> RangeRequest:
        """What to ask the store; a whole object is refused past its codecs' bound (or
        `unbounded` bytes where the data decides its size)."""
        if self.byte_range is None:
            return RangeRequest(self.key, None, chunk_bound(self.chain, unbounded))
        return RangeRequest(self.key, self.byte_range)

    @property
    def size(self) -> int:
        """The bytes to expect: the range's length; a whole chunk's compressed size is
        unknown until it lands, and its decoded size bounds it in practice."""
        if self.byte_range is None or self.byte_range.length is None:
            return self.chain.spec.nbytes
        return self.byte_range.length

    def expand(
        self, array: StoredArray, data: Buffer | None, version: Version | None
    ) -> list[Landed]:
        if self.index is not None:
            check_version(self.index, self.key, version)
        elif self.part is not None and data is not None:  # an unsharded chunk
            # the object's size, or a reference's length (`stored_size`)
            size = stored_size(version)
            if size is None:  # nothing to check the span by: read whole from now on
                array.whole_chunks = True
                raise UnsizedSpanError(self.key)
            self.part.check_stored(self.key, size)
        return [(self, data)]


class UnsizedSpanError(StaleIndexError):
    """A span of chunk `key` came in an answer that told no stored size (a server that
    sends `Content-Range: bytes a-b/*`): it is not decoded, unchecked; the read starts
    over (as for a stale index) with the array's chunks read whole (`whole_chunks`)."""

    def __init__(self, key: str) -> None:
        super().__init__(key, f"the answer for a span of chunk {key!r} told no size")


@dataclass(frozen=True, slots=True)
class WholeShard:
    """A shard needed in full, its index not known: one request for all of it, the index
    taken from its own bytes."""

    shard: ShardSelection

    @property
    def key(self) -> str:
        return self.shard.key

    def request(self, unbounded: int) -> RangeRequest:
        """What to ask the store: the whole shard, within its bound (see `LocatedChunk`)."""
        return RangeRequest(self.shard.key, None, shard_bound(self.shard.layout, unbounded))

    @property
    def size(self) -> int:
        """The bytes to expect: its chunks uncompressed and its index."""
        return self.shard.layout.nbytes + self.shard.layout.index_size

    def expand(
        self, array: StoredArray, data: Buffer | None, version: Version | None
    ) -> list[Landed]:
        shard, layout = self.shard, self.shard.layout
        if data is None:
            chain = layout.inner_chain
            return [(LocatedChunk(shard.key, None, chain, i.projection), None) for i in shard.inner]
        index = layout.index_of_shard(data, shard.key)
        remember_index(array, shard.key, index, version)
        view = memoryview(data).cast("B")
        landed: list[Landed] = []
        ranges = index.ranges_of([inner.inner_coords for inner in shard.inner])
        for inner, byte_range in zip(shard.inner, ranges, strict=True):
            chunk = LocatedChunk(shard.key, byte_range, layout.inner_chain, inner.projection)
            if byte_range is None:
                landed.append((chunk, None))
            else:
                start, stop = byte_range.resolve(len(view))
                landed.append((chunk, view[start:stop]))
        return landed


#: What a read fetches: a located chunk, or a shard whose chunks are located on landing.
Fetch = LocatedChunk | WholeShard


class WholeShardRefusedError(StaleIndexError):
    """A shard needed whole was refused as larger than its bound: the read starts over
    (as for a stale index) with the array's shards read by their index."""


def refused_whole(fetches: Sequence[tuple[StoredArray, Fetch]], error: ValueTooLargeError) -> None:
    """Raise `WholeShardRefusedError` where `error` refused a fetch of `fetches` (each
    with its array) that may be a shard needed whole, and mark its array's shards to be
    read by their index (`shards_by_index`); return where none may be.

    A shard may hold bytes no index entry points to (a writer that appended chunks and
    rewrote its index: zarrs' partial encoder), past the most its inner chunks and index
    can be stored as: uncompressed, one byte past. TensorStore and zarr-python read such
    a shard; read by its index, each inner chunk is still bounded by its codecs. A
    refusal the retry meets again (an unsharded chunk's) is raised then."""
    for array, fetch in fetches:
        if isinstance(fetch, WholeShard) and not array.shards_by_index:
            array.shards_by_index = True
            raise WholeShardRefusedError(fetch.key, str(error)) from error


def narrowed(chunk: LocatedChunk) -> LocatedChunk:
    """`chunk`, read as the part of it its projection takes where that is a span of at
    most half of it (`chunk_parts`); a range that is not the chunk's whole stored size
    (a corrupt index), or one of a shard whose size is not known (its index could not be
    checked to point inside it), is left whole, for the decode to refuse."""
    found = part_of(chunk.chain, chunk.projection)
    if found is None or (chunk.index is not None and stored_size(chunk.index.version) is None):
        return chunk
    part, offset = found
    whole = chunk.byte_range
    if whole is not None and (whole.is_suffix or whole.length != chunk.chain.spec.nbytes):
        return chunk
    start = offset if whole is None else whole.offset + offset
    return replace(chunk, byte_range=ByteRange.of(start, part.nbytes), part=part)


def plan_reads(
    array: StoredArray, projections: Sequence[ChunkProjection]
) -> tuple[list[Fetch], list[ShardSelection]]:
    """What to fetch at once (the chunks of an unsharded array; shards needed whole whose
    index is not cached), and the shards whose index must be known first."""
    if array.layout is None:
        chunks = plan_chunks(array.meta, array.prefix, projections)
        # A part is read where its chunk's size is checked as a whole read checks it: not
        # against a checksum of the whole value, nor where no answer tells the size.
        caps = array.store.capabilities
        whole = caps.checks_whole_values or not caps.sized_versions or array.whole_chunks
        located: list[Fetch] = []
        for c in chunks:
            chain = array.chain_for(c.projection.chunk_coords)
            chunk = LocatedChunk(c.key, None, chain, c.projection)
            located.append(chunk if whole else narrowed(chunk))
        return located, []
    ready: list[Fetch] = []
    indexed: list[ShardSelection] = []
    for shard in plan_shards(array, projections):
        # Needed whole and its index unknown: one request serves the index and the
        # chunks, a round trip fewer. With the index cached the exact ranges are known,
        # and the chunks are read as coalesced ranges decoded as each lands.
        if shard.whole and not array.shards_by_index and cached_index(array, shard) is None:
            ready.append(WholeShard(shard))
        else:
            indexed.append(shard)
    return ready, indexed


def locate(
    shards: Sequence[ShardSelection],
    indexes: Mapping[str, LocatedIndex | None],
    unbounded: int,
) -> tuple[list[LocatedChunk], list[ChunkProjection]]:
    """The chunks `shards` need, located with their `indexes` (None: the shard is
    missing), and the projections of chunks not stored (they read as the fill value).
    A range longer than its codecs can produce (or `unbounded`, where the data decides)
    is refused (`inner_range`)."""
    located: list[LocatedChunk] = []
    missing: list[ChunkProjection] = []
    for shard in shards:
        found = indexes[shard.key]
        layout = shard.layout
        for inner in shard.inner:
            byte_range = (
                None
                if found is None
                else inner_range(found.index, layout, shard.key, inner.inner_coords, unbounded)
            )
            if byte_range is None:
                missing.append(inner.projection)
            else:
                chunk = LocatedChunk(
                    shard.key, byte_range, layout.inner_chain, inner.projection, found
                )
                located.append(narrowed(chunk))
    return located, missing


def inner_range(
    index: ShardIndex, layout: ShardLayout, key: str, coords: tuple[int, ...], unbounded: int
) -> ByteRange | None:
    """Where inner chunk `coords` lies in shard `key` (None: not stored); a length its
    codecs cannot produce (a corrupt or forged index) raises `ValueTooLargeError`
    before anything is read."""
    byte_range = index.range_of(coords)
    if byte_range is not None and byte_range.length is not None:
        most = chunk_bound(layout.inner_chain, unbounded)
        if byte_range.length > most:
            raise ValueTooLargeError(
                f"cannot read shard {key!r}: its index says inner chunk {tuple(coords)} is "
                f"{byte_range.length} bytes, more than the {most} its codecs can produce; "
                "it was not read"
            )
    return byte_range

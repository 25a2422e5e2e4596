"""`sharding_indexed`: many inner chunks stored in one object, with an index (spec v1.0).

Pure, like every codec: `ShardLayout` *describes* where a shard's index lies
(`index_range`) and, once the engine has fetched it, where each inner chunk lies
(`ShardIndex.range_of`). The engine batches those reads across shards; this module
never reads a store.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from aiozarr.byte_range import ByteRange
from aiozarr.codecs.base import (
    UNSIZED_MAX_DECODED_BYTES,
    ArrayToArrayCodec,
    ArrayToBytesCodec,
    ChunkSpec,
    Codec,
)
from aiozarr.codecs.chain import CodecChain
from aiozarr.codecs.registry import get_codec, new_codec
from aiozarr.errors import CodecError, MetadataError
from aiozarr.metadata.fill_value import filled, is_fill
from aiozarr.metadata.model import CodecMetadata
from aiozarr.sizes import MAX_EXTENT

#: Offset and length of an inner chunk that is not stored.
EMPTY = 2**64 - 1

DEFAULT_CODECS = ({"name": "bytes", "configuration": {"endian": "little"}},)
DEFAULT_INDEX_CODECS = (
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "crc32c"},
)


@functools.lru_cache(maxsize=64)
def morton_order(chunks_per_shard: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Inner chunk coordinates in compressed Morton (Z) order: zarr-python's write order.

    Bit `b` of each dimension is interleaved while the dimension still has bits, so
    dimensions of different sizes share one code without gaps.
    """
    if not chunks_per_shard:  # a 0-d shard holds one inner chunk
        return ((),)
    coords = np.indices(chunks_per_shard).reshape(len(chunks_per_shard), -1).T
    bits = [(n - 1).bit_length() for n in chunks_per_shard]
    codes = np.zeros(len(coords), dtype=np.uint64)
    out_bit = 0
    for bit in range(max(bits, default=0)):
        for dim, nbits in enumerate(bits):
            if bit < nbits:
                codes |= ((coords[:, dim].astype(np.uint64) >> np.uint64(bit)) & np.uint64(1)) << (
                    np.uint64(out_bit)
                )
                out_bit += 1
    ordered = coords[np.argsort(codes, kind="stable")]
    return tuple(tuple(int(i) for i in c) for c in ordered)


#: How inner chunks may be laid out in a written shard (zarr-python 3.4's
#: `subchunk_write_order`; readers go by the index, so any order reads the same).
WRITE_ORDERS = ("morton", "lexicographic", "colexicographic", "unordered")


@functools.lru_cache(maxsize=64)
def write_order(chunks_per_shard: tuple[int, ...], order: str) -> tuple[tuple[int, ...], ...]:
    """Inner chunk coordinates in the order `order` (one of `WRITE_ORDERS`) lays them
    out: Morton, C order (lexicographic; "unordered" too, as zarr-python writes it) or
    F order (colexicographic)."""
    if order == "morton":
        return morton_order(chunks_per_shard)
    if order == "colexicographic":
        return tuple(tuple(reversed(c)) for c in np.ndindex(*reversed(chunks_per_shard)))
    return tuple(np.ndindex(*chunks_per_shard))


@dataclass(frozen=True, eq=False)
class ShardIndex:
    """A decoded shard index: `(offset, nbytes)` per inner chunk, `EMPTY` for absent ones."""

    offsets_and_lengths: np.ndarray  # (*chunks_per_shard, 2) uint64, read-only

    def range_of(self, inner_coords: tuple[int, ...]) -> ByteRange | None:
        """Where inner chunk `inner_coords` lies in the shard, or None when it is empty."""
        offset, length = self.offsets_and_lengths[tuple(inner_coords)]
        if offset == EMPTY and length == EMPTY:
            return None
        return ByteRange.of(int(offset), int(length))

    def ranges_of(self, inner_coords: Sequence[tuple[int, ...]]) -> list[ByteRange | None]:
        """`range_of` of many inner chunks, in one lookup."""
        table = self.offsets_and_lengths
        grid = table.shape[:-1]
        strides = np.array([math.prod(grid[d + 1 :]) for d in range(len(grid))], np.int64)
        coords = np.array(inner_coords, dtype=np.int64).reshape(len(inner_coords), len(grid))
        pairs = table.reshape(-1, 2)[coords @ strides].tolist()
        return [
            None if offset == EMPTY and length == EMPTY else ByteRange(offset, length)
            for offset, length in pairs
        ]

    @property
    def is_empty(self) -> bool:
        """Whether no inner chunk is stored."""
        return bool(np.all(self.offsets_and_lengths == EMPTY))

    @property
    def nbytes(self) -> int:
        """Memory held by this index (for cache accounting)."""
        return int(self.offsets_and_lengths.nbytes)

    def check_within(self, start: int, stop: int, key: str, why: str) -> None:
        """Raise `CodecError` if a stored inner chunk lies outside bytes `start`..`stop`
        of its shard (`why`: what lies outside)."""
        offsets, lengths = self.offsets_and_lengths[..., 0], self.offsets_and_lengths[..., 1]
        stored = (offsets != EMPTY) | (lengths != EMPTY)
        top = np.uint64(stop)
        outside = stored & (
            (offsets < start) | (offsets > top) | (lengths > top - np.minimum(offsets, top))
        )
        _refuse_entry(self.offsets_and_lengths, outside, key, why)

    def check_entries(self, key: str) -> None:
        """Raise `CodecError` naming the first inner chunk whose entry is neither empty
        (both fields `EMPTY`) nor a byte range an object can hold (ending below 2**63)."""
        offsets, lengths = self.offsets_and_lengths[..., 0], self.offsets_and_lengths[..., 1]
        one_sided = (offsets == EMPTY) != (lengths == EMPTY)
        _refuse_entry(self.offsets_and_lengths, one_sided, key, "only one field marked empty")
        top = np.uint64(MAX_EXTENT)
        stored = (offsets != EMPTY) & (lengths != EMPTY)
        too_far = stored & ((offsets > top) | (lengths > top - np.minimum(offsets, top)))
        _refuse_entry(self.offsets_and_lengths, too_far, key, "a range ending past 2**63")
        self._check_disjoint(stored, key)

    def _check_disjoint(self, stored: np.ndarray, key: str) -> None:
        """Refuse an inner chunk whose bytes overlap another's (the same range for both
        is not refused: a writer may store equal chunks once)."""
        ranges = self.offsets_and_lengths[stored]
        if len(ranges) < 2:
            return
        ranges = ranges[np.argsort(ranges[:, 0], kind="stable")]
        before, after = ranges[:-1], ranges[1:]
        same = np.all(before == after, axis=1)
        overlap = ~same & (after[:, 0] < before[:, 0] + before[:, 1])
        if overlap.any():
            offset, length = after[np.argmax(overlap)]
            bad = np.all(self.offsets_and_lengths == (offset, length), axis=-1)
            _refuse_entry(self.offsets_and_lengths, bad, key, "overlapping another inner chunk")


def _refuse_entry(table: np.ndarray, bad: np.ndarray, key: str, why: str) -> None:
    """`CodecError` for the first inner chunk where `bad` holds, if any (`why`: its fault)."""
    if not bad.any():
        return
    coords = tuple(int(i) for i in np.argwhere(bad)[0])
    offset, length = (int(v) for v in table[coords])
    raise CodecError(
        f"shard {key!r}: corrupt shard index: inner chunk {coords} has offset {offset} "
        f"and length {length}, {why}"
    )


def check_index_size(shard_shape: Sequence[int], chunk_shape: Sequence[int]) -> None:
    """`MetadataError` when a shard of `shard_shape` holds so many inner chunks of
    `chunk_shape` that its index (16 bytes each, built whole on every write) would pass
    `UNSIZED_MAX_DECODED_BYTES`, the most any chunk decodes to."""
    count = math.prod(s // c for s, c in zip(shard_shape, chunk_shape, strict=True) if c)
    if 16 * count + 4 > UNSIZED_MAX_DECODED_BYTES:
        raise MetadataError(
            f"shards {tuple(shard_shape)} of chunks {tuple(chunk_shape)} hold {count} inner "
            f"chunks each: their index would take {16 * count + 4} bytes, more than the "
            f"{UNSIZED_MAX_DECODED_BYTES} a chunk may take; use larger chunks or smaller shards"
        )


@dataclass(frozen=True, eq=False)
class ShardLayout:
    """Where things lie in a shard of one shape, and how to encode and decode them.

    Shapes and inner-chunk coordinates are on the array's axes. When array->array
    codecs come before `sharding_indexed` (each one declaring that it `decodes_parts`),
    the stored shard is the array's shard encoded by them: on reordered axes `axes`
    (stored axis i is array axis `axes[i]`; None: the array's axes) where one reorders
    them. The index is stored on those axes and `inner_chain` starts with those
    codecs, so everything here still speaks of the array's axes and values.
    """

    shard_shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    chunks_per_shard: tuple[int, ...]
    inner_chain: CodecChain
    index_chain: CodecChain
    index_size: int
    index_location: Literal["start", "end"]
    index_range: ByteRange
    axes: tuple[int, ...] | None = None
    order: str = "morton"  # how written shards lay out inner chunks (`WRITE_ORDERS`)

    def _to_array_axes(self, table: np.ndarray) -> np.ndarray:
        if self.axes is None:
            return table
        inverse = tuple(int(i) for i in np.argsort(self.axes))
        return np.ascontiguousarray(table.transpose(*inverse, len(inverse)))

    def _to_stored_axes(self, table: np.ndarray) -> np.ndarray:
        if self.axes is None:
            return table
        return np.ascontiguousarray(table.transpose(*self.axes, len(self.axes)))

    def _write_order(self) -> tuple[tuple[int, ...], ...]:
        """Inner chunks (array axes) in `order` over the stored index, as zarr-python."""
        if self.axes is None:
            return write_order(self.chunks_per_shard, self.order)
        stored = tuple(self.chunks_per_shard[a] for a in self.axes)
        inverse = tuple(int(i) for i in np.argsort(self.axes))
        return tuple(tuple(c[i] for i in inverse) for c in write_order(stored, self.order))

    @property
    def nbytes(self) -> int:
        """The decoded size of a whole shard."""
        return math.prod(self.shard_shape) * self.inner_chain.spec.dtype.itemsize

    @property
    def max_stored_bytes(self) -> int | None:
        """The most bytes a shard can be stored as: every inner chunk at its chain's
        bound, plus the index; None when the inner chunks have no bound."""
        inner = self.inner_chain.max_encoded_size()
        if inner is None:
            return None
        return inner * math.prod(self.chunks_per_shard) + self.index_size

    def decode_index(self, data: Any, key: str = "", size: int | None = None) -> ShardIndex:
        """Decode the index bytes fetched at `index_range` (`ChecksumError` if corrupt),
        checked to point where a shard of `size` bytes holds its chunks, where known."""
        view = memoryview(data).cast("B")
        if view.nbytes != self.index_size:
            raise CodecError(
                f"shard {key!r}: index is {view.nbytes} bytes, expected {self.index_size}"
            )
        try:
            decoded = self.index_chain.decode(view)
        except CodecError as error:  # the index's, not a chunk's: say so
            raise type(error)(f"shard {key!r}: its index: {error}") from error
        table = self._to_array_axes(np.array(decoded, dtype=np.uint64))
        table.flags.writeable = False
        index = ShardIndex(table)
        index.check_entries(key)
        if size is not None:
            self._check_fits(index, size, key)
        return index

    def _check_fits(self, index: ShardIndex, size: int, key: str) -> None:
        """Refuse an index pointing outside the bytes a shard of `size` bytes holds its
        chunks in, all but its index: a shard cut short, or with bytes cut out of it,
        whose chunks would otherwise read shifted bytes or the index's as values."""
        if self.index_location == "start":
            start, stop = self.index_size, size
        else:
            start, stop = 0, max(0, size - self.index_size)
        why = f"outside bytes [{start}, {stop}) of the {size}-byte shard, where its chunks lie"
        index.check_within(start, stop, key, f"{why} (the shard is cut short or corrupt)")

    def index_of_shard(self, shard: Any, key: str = "") -> ShardIndex:
        """The index of a whole shard's bytes (checked to point inside them)."""
        view = memoryview(shard).cast("B")
        if view.nbytes < self.index_size:
            raise CodecError(
                f"shard {key!r}: {view.nbytes} bytes is shorter than its "
                f"{self.index_size}-byte index"
            )
        start, stop = self.index_range.resolve(view.nbytes)
        return self.decode_index(view[start:stop], key, view.nbytes)

    def encode_shard(self, chunks: Mapping[tuple[int, ...], Any]) -> bytes | None:
        """Assemble encoded inner chunks into a shard; None when every one is empty.

        Inner chunks missing from `chunks`, None or of zero length are stored as empty.
        They are laid out in `order` (Morton by default, as zarr-python writes them).
        """
        table = np.full((*self.chunks_per_shard, 2), EMPTY, dtype=np.uint64)
        parts: list[Any] = []
        offset = self.index_size if self.index_location == "start" else 0
        for coords in self._write_order():
            data = chunks.get(coords)
            if data is None:
                continue
            view = memoryview(data).cast("B")
            if not view.nbytes:
                continue
            table[coords] = (offset, view.nbytes)
            parts.append(view)
            offset += view.nbytes
        if not parts:
            return None
        return self._assemble(table, parts)

    def empty_shard(self) -> bytes:
        """A shard that stores no inner chunk (only its index)."""
        return self._assemble(np.full((*self.chunks_per_shard, 2), EMPTY, dtype=np.uint64), [])

    def _assemble(self, table: np.ndarray, parts: list[Any]) -> bytes:
        index = self.index_chain.encode(self._to_stored_axes(table))
        return b"".join([index, *parts] if self.index_location == "start" else [*parts, index])

    def inner_selection(self, inner_coords: tuple[int, ...]) -> tuple[slice, ...]:
        """The region of the shard covered by inner chunk `inner_coords`."""
        return tuple(
            slice(i * c, (i + 1) * c) for i, c in zip(inner_coords, self.chunk_shape, strict=True)
        )

    def decode_shard(self, data: Any, key: str = "") -> np.ndarray:
        """Decode a whole shard; empty inner chunks hold the fill value."""
        view = memoryview(data).cast("B")
        index = self.index_of_shard(view, key)
        spec = self.inner_chain.spec
        out = filled(self.shard_shape, spec.dtype, spec.fill_value)
        for coords in np.ndindex(*self.chunks_per_shard):
            byte_range = index.range_of(coords)
            if byte_range is not None:
                start, stop = byte_range.resolve(view.nbytes)
                target = out[self.inner_selection(coords)]
                self.inner_chain.decode_into(view[start:stop], target, key)
        return out


def _codec_list(codecs: Sequence[Any], field: str) -> tuple[Codec, ...]:
    if isinstance(codecs, str | bytes | Mapping) or not isinstance(codecs, Sequence):
        raise MetadataError(f"field {field!r} must be a list of codecs, got {codecs!r}")
    return tuple(
        c if isinstance(c, Codec) else get_codec(c if isinstance(c, CodecMetadata) else dict(c))
        for c in codecs
    )


def _new_inner(codec: Any, field: str, dtype: Any) -> Any:
    """An inner codec a caller wrote as a dict for a new array, built `strict` as the
    outer chain's codecs are; anything else is left for `_codec_list` to judge."""
    if not (isinstance(codec, Mapping) and isinstance(codec.get("name"), str)):
        return codec
    try:
        return new_codec(codec, "", dtype).to_metadata().to_json()
    except MetadataError as error:
        raise MetadataError(f"codec 'sharding_indexed', field {field!r}: {error}") from error


class ShardingCodec(ArrayToBytesCodec):
    """Store a shard's inner chunks, each through `codecs`, plus an index."""

    name = "sharding_indexed"

    def __init__(
        self,
        chunk_shape: Sequence[int],
        codecs: Sequence[Any] = DEFAULT_CODECS,
        index_codecs: Sequence[Any] = DEFAULT_INDEX_CODECS,
        index_location: Literal["start", "end"] = "end",
    ) -> None:
        if isinstance(chunk_shape, str) or not all(
            isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in chunk_shape
        ):
            raise MetadataError(
                f"field 'chunk_shape' must be a list of positive integers, got {chunk_shape!r}"
            )
        if index_location not in ("start", "end"):
            raise MetadataError(
                f"field 'index_location' must be 'start' or 'end', got {index_location!r}"
            )
        self.chunk_shape = tuple(chunk_shape)
        self.codecs = _codec_list(codecs, "codecs")
        self.index_codecs = _codec_list(index_codecs, "index_codecs")
        self.index_location: Literal["start", "end"] = index_location
        #: How written shards lay out inner chunks (`WRITE_ORDERS`): not in the metadata
        #: (zarr-python 3.4's `subchunk_write_order`, which its codec pipeline hands on)
        self.write_order = "morton"
        self._layouts: dict[tuple[Any, ...], ShardLayout] = {}

    @classmethod
    def lenient_config(cls, config: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[str]]:
        """Accept a configuration without `index_codecs` (zarrita up to 0.1.0a14).

        Those writers always stored the index as little-endian uint64 pairs followed by
        its crc32c: the spec's default chain, so a checksum mismatch still fails loudly.
        """
        if "index_codecs" in config:
            return config, []
        return {**config, "index_codecs": list(DEFAULT_INDEX_CODECS)}, [
            "field 'index_codecs' is missing (a sharding draft before 1.0), "
            "read as [bytes(endian=little), crc32c]"
        ]

    @classmethod
    def completed_config(cls, config: Mapping[str, Any], dtype: Any) -> dict[str, Any]:
        """`config` for a new array of `dtype`: its inner codecs, and its index codecs
        (for the index's uint64 pairs), each built as a new array's codec is (completed,
        an unknown member a `MetadataError`) and stored as it writes itself."""
        config = dict(config)
        for field, of in (("codecs", dtype), ("index_codecs", np.dtype("<u8"))):
            inner = config.get(field)
            if isinstance(inner, list):
                config[field] = [_new_inner(c, field, of) for c in inner]
        return config

    def configuration(self) -> dict[str, Any]:
        return {
            "chunk_shape": list(self.chunk_shape),
            "codecs": [c.to_metadata().to_json() for c in self.codecs],
            "index_codecs": [c.to_metadata().to_json() for c in self.index_codecs],
            "index_location": self.index_location,
        }

    def validate(self, spec: ChunkSpec) -> None:
        self.layout(spec)

    decodes_parts = True  # each inner chunk is read and decoded alone
    elides_fill = True  # inner chunks of the fill value are left empty

    def max_encoded_size(self, spec: ChunkSpec) -> int | None:
        return self.layout(spec).max_stored_bytes

    def layout(
        self,
        shard_spec: ChunkSpec,
        before: Sequence[ArrayToArrayCodec] = (),
        axes: tuple[int, ...] | None = None,
    ) -> ShardLayout:
        """The layout of shards of `shard_spec` (built once per spec, then cached).

        `before`: the array->array codecs before this one, which encode the shard on
        the axes `axes` (`CodecChain.encoded_axes`); `shard_spec` and the layout are
        then on the array's axes and values.
        """
        before = tuple(before)
        cache_key = (
            shard_spec.shape,
            shard_spec.dtype,
            repr(shard_spec.fill_value),
            before,
            axes,
            self.write_order,
        )
        layout = self._layouts.get(cache_key)
        if layout is None:
            layout = self._layouts[cache_key] = self._build_layout(shard_spec, before, axes)
        return layout

    def _build_layout(
        self, spec: ChunkSpec, before: tuple[ArrayToArrayCodec, ...], axes: tuple[int, ...] | None
    ) -> ShardLayout:
        inner = self.chunk_shape
        shape = spec.shape if axes is None else tuple(spec.shape[a] for a in axes)
        if len(inner) != len(shape) or any(s % c for s, c in zip(shape, inner, strict=False)):
            raise MetadataError(
                f"codec 'sharding_indexed': field 'chunk_shape' {list(inner)} must divide "
                f"the shard shape {list(shape)} in every dimension"
            )
        per_shard = tuple(s // c for s, c in zip(shape, inner, strict=True))
        index_spec = ChunkSpec((*per_shard, 2), np.dtype(np.uint64), EMPTY)
        if axes is not None:  # the inner chunks and the index on the array's axes
            inverse = tuple(int(i) for i in np.argsort(axes))
            inner = tuple(inner[i] for i in inverse)
            per_shard = tuple(per_shard[i] for i in inverse)
        # an inner chunk (array side) goes through the codecs before sharding, then its own
        codecs: tuple[Codec, ...] = (*before, *self.codecs)
        inner_spec = ChunkSpec(inner, spec.dtype, spec.fill_value)
        inner_chain = CodecChain.from_codecs(codecs, inner_spec, "sharding_indexed codecs")
        index_chain = CodecChain.from_codecs(
            self.index_codecs, index_spec, "sharding_indexed index_codecs"
        )
        index_size = index_chain.encoded_size()
        if index_size is None:
            names = [c.name for c in self.index_codecs]
            raise MetadataError(
                f"codec 'sharding_indexed': field 'index_codecs' {names} must have a fixed "
                "encoded size (no compression)"
            )
        at_start = self.index_location == "start"
        return ShardLayout(
            shard_shape=spec.shape,
            chunk_shape=inner,
            chunks_per_shard=per_shard,
            inner_chain=inner_chain,
            index_chain=index_chain,
            index_size=index_size,
            index_location=self.index_location,
            index_range=ByteRange.of(0, index_size) if at_start else ByteRange.last(index_size),
            axes=axes,
            order=self.write_order,
        )

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes:
        """Encode a whole shard; inner chunks equal to the fill value are left empty."""
        layout = self.layout(spec)
        chunks: dict[tuple[int, ...], Any] = {}
        for coords in np.ndindex(*layout.chunks_per_shard):
            inner = array[layout.inner_selection(coords)]
            if not is_fill(inner, spec.fill_value):
                chunks[coords] = layout.inner_chain.encode(inner)
        encoded = layout.encode_shard(chunks)
        return layout.empty_shard() if encoded is None else encoded

    def decode(self, data: Any, spec: ChunkSpec) -> np.ndarray:
        # `spec.key`: the stored shard, named by a broken index's error
        return self.layout(spec).decode_shard(data, spec.key)


def layout_of(chain: CodecChain, shape: tuple[int, ...] | None = None) -> ShardLayout | None:
    """The layout, on the array's axes, of a shard of `shape` (the chain's chunk shape by
    default) when the chain's array->bytes codec is `sharding_indexed`, else None.

    Where the array->array codecs before it let an inner chunk be read alone
    (`CodecChain.reads_inner_chunks`), the layout includes them; where they do not but
    keep the shape, it is the shard as the sharding codec stores it, and such shards are
    read, decoded and written whole (`StoredArray.layout`). Others are refused
    (`CodecChain.encoded_axes` names the codec).
    """
    codec = chain.array_to_bytes
    if not isinstance(codec, ShardingCodec):
        return None
    if shape is not None:
        chain = chain.for_shape(shape)
    if not chain.reads_inner_chunks() and chain.bytes_spec.shape == chain.spec.shape:
        return codec.layout(chain.bytes_spec)
    return codec.layout(chain.spec, chain.array_to_array, chain.encoded_axes())

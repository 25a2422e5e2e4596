"""The three kinds of codec of the v3 spec. Codecs are synchronous and pure:
they turn bytes into arrays and back, and never see a store, a loop or a thread.
"""

from __future__ import annotations

import enum
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from aiozarr.errors import CodecError, MetadataError
from aiozarr.metadata.model import CodecMetadata

#: What a compressor may add to its input, on top of doubling it: gzip adds 18 bytes and
#: 5 per 16 KiB stored block, zstd 3 per 128 KiB block plus a header, blosc 16 plus 16
#: per block, bz2 and lzma about 1 %. Twice the input plus this holds for each of them
#: with room to spare: a bound for refusing a stored value that cannot be a chunk, not a
#: size estimate.
ENCODED_SLACK_BYTES = 4096


#: The most bytes a bytes->bytes codec may decode to where the chunk's shape does not
#: bound its encoded size (variable-length strings and bytes, v2 object arrays), and for
#: `decode` called without a size: 1 GiB, far above any chunk a writer makes (zarr-python
#: suggests chunks of 1-100 MB), low enough that a forged chunk cannot exhaust a machine.
UNSIZED_MAX_DECODED_BYTES = 1 << 30


def expanded(size: int) -> int:
    """The most a compressor can turn `size` bytes into (see `ENCODED_SLACK_BYTES`)."""
    return 2 * size + ENCODED_SLACK_BYTES


@dataclass(frozen=True)
class ChunkSpec:
    """What a codec is handed: the decoded chunk's shape, dtype and fill value, and
    the key of the chunk being decoded (for messages; empty where not known)."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    fill_value: Any
    key: str = field(default="", compare=False)

    def named(self, key: str) -> ChunkSpec:
        """This spec for the chunk stored under `key`."""
        return ChunkSpec(self.shape, self.dtype, self.fill_value, key)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


class CodecRole(enum.Enum):
    """Where a codec stands in a chain (v3 core spec): what it takes and what it gives."""

    ARRAY_TO_ARRAY = "array->array"
    ARRAY_TO_BYTES = "array->bytes"
    BYTES_TO_BYTES = "bytes->bytes"


class Codec(ABC):
    """Common part of every codec: its metadata name and configuration, and what it
    declares of itself (its `role`, whether it `decodes_parts`), which is all a chain
    asks of it."""

    #: The name used in metadata documents; set by each subclass.
    name: ClassVar[str]
    #: Where the codec stands in a chain; set by each of the three kinds.
    role: ClassVar[CodecRole]
    #: Whether a part of a chunk is decoded from a part of this codec's output, without
    #: the rest, as the engine reads parts: an array->array codec's block of the chunk
    #: (`elementwise`, `axis_order`), an array->bytes codec's inner chunks located by
    #: an index (sharding). No bytes->bytes codec does.
    decodes_parts: ClassVar[bool] = False

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any]) -> Codec:
        """Build from the `configuration` object of metadata; raise `MetadataError` if bad."""
        return cls(**configuration)

    @abstractmethod
    def configuration(self) -> dict[str, Any]:
        """The `configuration` object to write into metadata."""

    def to_metadata(self) -> CodecMetadata:
        return CodecMetadata(self.name, self.configuration())

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        """The spec of this codec's output, given the spec of its input."""
        return spec

    def validate(self, spec: ChunkSpec) -> None:  # noqa: B027 (optional hook)
        """Raise `MetadataError` if this codec cannot encode chunks of `spec`."""

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.configuration() == other.configuration()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), repr(sorted(self.configuration().items()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.configuration()!r})"


class ArrayToArrayCodec(Codec):
    """Array in, array out (e.g. transpose).

    One that `decodes_parts` says how a block of its input lies in its output: in the
    same place (`elementwise`), or on reordered axes (`axis_order`, a pure view). Such
    codecs may come before `sharding_indexed` with inner chunks still read alone.
    """

    role = CodecRole.ARRAY_TO_ARRAY
    #: Whether each element is encoded alone and stays in its place (the shape kept,
    #: no element reordered): a block of the output decodes to the same block of the
    #: input. Before `sharding_indexed`, inner chunks are then read alone where the
    #: codec also `keeps_fill`.
    elementwise: ClassVar[bool] = False

    def encoded_fill(self, spec: ChunkSpec) -> Any:
        """The fill value of `spec` as this codec encodes it: what a chunk of fill values
        is stored as (a codec that changes values resolves its output spec with it); a
        fill it cannot encode is a `MetadataError`."""
        if spec.fill_value is None:
            return None
        try:
            return self.encode(np.asarray(spec.fill_value, dtype=spec.dtype), spec)[()]
        except CodecError as error:
            raise MetadataError(f"fill value {spec.fill_value!r}: {error}") from None

    def keeps_fill(self, spec: ChunkSpec) -> bool:
        """Whether the fill value of `spec` decodes back from what it encodes to, bit for
        bit. `sharding_indexed` after the codec fills a missing inner chunk with the
        encoded fill value: read alone, such a chunk is the array's fill value, which is
        right only then (a cast to a narrower type, or a float scale, may lose it)."""
        if spec.fill_value is None:
            return True
        one = ChunkSpec((1,) * len(spec.shape), spec.dtype, spec.fill_value, spec.key)
        fill = np.full(one.shape, spec.fill_value, dtype=spec.dtype)
        try:
            back = np.asarray(self.decode(self.encode(fill, one), one), dtype=spec.dtype)
        except CodecError:
            return False
        return back.tobytes() == fill.tobytes()

    def axis_order(self, ndim: int) -> tuple[int, ...] | None:
        """When the codec only reorders the axes of a chunk of `ndim` dimensions (its
        output is a view of its input, axis i of the output being axis `order[i]` of
        the input), that order; None for any other codec."""
        return None

    @abstractmethod
    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray: ...

    @abstractmethod
    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        """`spec` is this codec's *input* spec (the decoded side)."""


class ArrayToBytesCodec(Codec):
    """Array in, bytes out (e.g. bytes, sharding_indexed, vlen-utf8)."""

    role = CodecRole.ARRAY_TO_BYTES
    #: Whether an input of nothing but `spec.fill_value` encodes to nothing of its own
    #: (`sharding_indexed`: every inner chunk left empty). zarr-python then stores no
    #: chunk at all (`CodecChain.encode_unless_fill`).
    elides_fill: ClassVar[bool] = False

    @abstractmethod
    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes | memoryview: ...

    @abstractmethod
    def decode(self, data: Any, spec: ChunkSpec) -> np.ndarray:
        """`data` is any buffer; the result has `spec.shape` and `spec.dtype`."""

    def memory_dtype(self, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        """The dtype in which this codec's output for chunks of `dtype` is the chunk's
        elements as they lie in memory (C order, nothing added or changed), or None
        where it is not such a plain view of them. A chain then decompresses straight
        into an output array."""
        return None

    def encoded_size(self, spec: ChunkSpec) -> int | None:
        """Exact encoded size when it depends only on `spec`, else None."""
        return None

    def max_encoded_size(self, spec: ChunkSpec) -> int | None:
        """The most bytes a chunk of `spec` can encode to; None where the data decides
        (variable-length strings). Readers refuse larger stored chunks unread."""
        return self.encoded_size(spec)


class BytesToBytesCodec(Codec):
    """Bytes in, bytes out (e.g. gzip, zstd, blosc, crc32c)."""

    role = CodecRole.BYTES_TO_BYTES

    #: Whether `decode_into_buffer` writes the decoded bytes into the caller's memory:
    #: the chain then decodes a chunk straight into its place in the output.
    decodes_into_buffer: ClassVar[bool] = False

    @abstractmethod
    def encode(self, data: Any, spec: ChunkSpec) -> bytes | memoryview: ...

    @abstractmethod
    def decode(self, data: Any, spec: ChunkSpec) -> bytes | memoryview: ...

    def encoded_size(self, size: int) -> int | None:
        """Exact encoded size for `size` input bytes when fixed (crc32c: +4), else None."""
        return None

    def max_encoded_size(self, size: int) -> int:
        """The most bytes `size` input bytes can encode to: the exact size when fixed,
        else a compressor's worst case (`expanded`)."""
        exact = self.encoded_size(size)
        return expanded(size) if exact is None else exact

    def decode_sized(
        self, data: Any, spec: ChunkSpec, size: int, exact: bool = True
    ) -> bytes | memoryview:
        """`decode` when the decoded size is exactly `size` (`exact`) or at most `size`.

        Decompressors override it to never produce more than `size` bytes (a bounded
        stream, or a size their header records checked first); the default decodes,
        then refuses output of another size, which bounds codecs whose output is no
        larger than their input (checksums, shuffles).
        """
        out = self.decode(data, spec)
        check_decoded_size(self.name, memoryview(out).nbytes, size, exact)
        return out

    def decode_into_buffer(self, data: Any, out: Any) -> bytes | memoryview:
        """Decode into `out` (writable, exactly the decoded size) or, where `out` is None,
        into a new buffer. Only for codecs that set `decodes_into_buffer`."""
        raise NotImplementedError(f"codec {self.name!r} does not decode into a buffer")


def check_decoded_size(name: str, produced: int, size: int, exact: bool) -> None:
    """Refuse `produced` decoded bytes unless they are exactly (`exact`) or at most `size`."""
    if produced > size:
        raise CodecError(f"codec {name!r}: data decompresses to more than {size} bytes")
    if exact and produced != size:
        raise CodecError(f"codec {name!r}: data decompresses to {produced} bytes, expected {size}")

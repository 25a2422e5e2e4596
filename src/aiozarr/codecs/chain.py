"""`CodecChain`: an array's codecs, checked and bound once to its chunk spec.

Binding resolves, once, the spec each codec sees (array->array codecs may change
the shape) and the exact decoded size each bytes->bytes codec must produce when
it is known, so decoding a chunk does no planning. On a rectilinear chunk grid each
chunk has its own shape: `for_shape` binds the same codecs to another shape, once
per distinct shape (a grid has few).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, cast

import numpy as np

from aiozarr.codecs.base import (
    UNSIZED_MAX_DECODED_BYTES,
    ArrayToArrayCodec,
    ArrayToBytesCodec,
    BytesToBytesCodec,
    ChunkSpec,
    Codec,
    CodecRole,
)
from aiozarr.codecs.registry import get_codec
from aiozarr.errors import AiozarrError, CodecError, MetadataError, UnsupportedError
from aiozarr.metadata.fill_value import is_fill
from aiozarr.metadata.model import ArrayMetadata, CodecMetadata
from aiozarr.sizes import memory_bytes

#: Chains bound to other chunk shapes kept by `CodecChain.for_shape`.
_MAX_SHAPES = 1024


def _where(key: str) -> str:
    return f"chunk {key!r}" if key else "chunk"


def _raise_with_key(error: CodecError, key: str) -> NoReturn:
    """Raise the same kind of error, its message prefixed with the chunk key."""
    if not key or repr(key) in str(error):  # named already (a key is quoted where named)
        raise error
    raise type(error)(f"{_where(key)}: {error}") from error


class CodecChain:
    """array->array codecs, one array->bytes codec, bytes->bytes codecs, bound to `spec`."""

    def __init__(
        self,
        array_to_array: Sequence[ArrayToArrayCodec],
        array_to_bytes: ArrayToBytesCodec,
        bytes_to_bytes: Sequence[BytesToBytesCodec],
        spec: ChunkSpec,
        key: str = "",
    ) -> None:
        self.array_to_array = tuple(array_to_array)
        self.array_to_bytes = array_to_bytes
        self.bytes_to_bytes = tuple(bytes_to_bytes)
        self._spec = spec
        self._key = key
        self._by_shape: dict[tuple[int, ...], CodecChain] = {}
        self._reads_inner: bool | None = None
        where = key or "metadata"
        specs = []
        with _naming(where):  # a codec's MetadataError names the document
            for codec in self.array_to_array:
                codec.validate(spec)
                specs.append(spec)
                spec = codec.resolve(spec)  # a fill value it cannot encode is one too
            array_to_bytes.validate(spec)
        # The input spec of each array->array codec, and of the array->bytes codec.
        self._array_specs = tuple(specs)
        self._bytes_spec = spec
        sizes: list[tuple[int, bool]] = []
        size = array_to_bytes.encoded_size(spec)
        most = array_to_bytes.max_encoded_size(spec)
        for bb in self.bytes_to_bytes:
            with _naming(where):
                bb.validate(spec)
            if size is not None:
                sizes.append((size, True))
            else:  # variable-length data: no bound but the ceiling
                sizes.append((UNSIZED_MAX_DECODED_BYTES if most is None else most, False))
            size = None if size is None else bb.encoded_size(size)
            most = None if most is None else bb.max_encoded_size(most)
        # What each bytes->bytes codec decodes to: exactly (True) or at most that size.
        self._decoded_sizes = tuple(sizes)
        self._encoded_size = size
        self._max_encoded_size = most

    @classmethod
    def from_codecs(
        cls, codecs: Sequence[CodecMetadata | Codec], spec: ChunkSpec, key: str = ""
    ) -> CodecChain:
        """Build from v3 codecs in metadata order: array->array*, one array->bytes, bytes->bytes*.

        Raises `MetadataError` (naming `key`) when the order is wrong or a codec cannot
        encode `spec`, `UnsupportedError` for an unknown codec.
        """
        where = key or "metadata"
        built = [c if isinstance(c, Codec) else get_codec(c, key) for c in codecs]
        to_bytes = [i for i, c in enumerate(built) if c.role is CodecRole.ARRAY_TO_BYTES]
        if len(to_bytes) != 1:
            names = [c.name for c in built]
            raise MetadataError(
                f"{where}: 'codecs' {names} must contain exactly one array->bytes codec "
                f"(e.g. 'bytes'), found {len(to_bytes)}"
            )
        split = to_bytes[0]
        for i, codec in enumerate(built):
            expected = CodecRole.ARRAY_TO_ARRAY if i < split else CodecRole.BYTES_TO_BYTES
            if i != split and codec.role is not expected:
                place = "before" if i < split else "after"
                raise MetadataError(
                    f"{where}: codec {codec.name!r} (position {i}) cannot come {place} the "
                    f"array->bytes codec {built[split].name!r}: 'codecs' must be "
                    "array->array codecs, one array->bytes codec, then bytes->bytes codecs"
                )
        return cls(
            cast("list[ArrayToArrayCodec]", built[:split]),
            cast("ArrayToBytesCodec", built[split]),
            cast("list[BytesToBytesCodec]", built[split + 1 :]),
            spec,
            key,
        )

    @classmethod
    def from_metadata(cls, meta: ArrayMetadata, key: str = "") -> CodecChain:
        """The chain that encodes chunks of `meta` (v3 codecs, or the v2/v1 numcodecs bridge)."""
        spec = ChunkSpec(tuple(meta.chunk_shape), meta.dtype, meta.fill_value)
        if meta.zarr_format == 3:
            if not meta.codecs:
                raise MetadataError(f"{key or 'metadata'}: field 'codecs' must not be empty")
            return cls.from_codecs(meta.codecs, spec, key)
        from aiozarr.codecs.numcodecs_v2 import NumcodecsV2Codec

        bridge = NumcodecsV2Codec.from_v2(meta.order, meta.filters, meta.compressor, key)
        return cls((), bridge, (), spec, key)

    @property
    def spec(self) -> ChunkSpec:
        """The decoded chunk: shape, dtype and fill value."""
        return self._spec

    def for_shape(self, shape: tuple[int, ...]) -> CodecChain:
        """The same codecs bound to chunks of `shape` (this chain when it has that shape).

        Chains are kept per shape; a grid with more distinct shapes than `_MAX_SHAPES`
        starts the cache afresh rather than growing it without bound.
        """
        if shape == self._spec.shape:
            return self
        chain = self._by_shape.get(shape)
        if chain is None:
            if len(self._by_shape) >= _MAX_SHAPES:
                self._by_shape.clear()
            spec = ChunkSpec(shape, self._spec.dtype, self._spec.fill_value)
            chain = CodecChain(
                self.array_to_array, self.array_to_bytes, self.bytes_to_bytes, spec, self._key
            )
            self._by_shape[shape] = chain
        return chain

    @property
    def codecs(self) -> tuple[Codec, ...]:
        """Every codec, in metadata order."""
        return (*self.array_to_array, self.array_to_bytes, *self.bytes_to_bytes)

    @property
    def bytes_spec(self) -> ChunkSpec:
        """What the array->bytes codec encodes: the chunk after the array->array codecs."""
        return self._bytes_spec

    def reads_inner_chunks(self) -> bool:
        """Whether a part of a chunk decodes from the part of what the array->bytes codec
        encodes (sharding's inner chunks read alone): every array->array codec reorders
        axes, or encodes each element alone and `keeps_fill`."""
        if self._reads_inner is None:  # asked per shard planned: worked out once
            self._reads_inner = all(
                codec.decodes_parts
                and (
                    codec.axis_order(len(spec.shape)) is not None
                    or (codec.elementwise and codec.keeps_fill(spec))
                )
                for codec, spec in zip(self.array_to_array, self._array_specs, strict=True)
            )
        return self._reads_inner

    def encoded_axes(self) -> tuple[int, ...] | None:
        """How a block of a decoded chunk lies in the array the array->bytes codec
        encodes: that array's axis i is the chunk's axis `axes[i]` (None: the same
        axes, no array->array codec reorders them), as the array->array codecs declare
        it. A codec that does not declare `decodes_parts` raises `UnsupportedError`:
        no part of its output stands for a part of the chunk (sharding's inner chunks
        could not be read alone)."""
        ndim = len(self._spec.shape)
        axes = tuple(range(ndim))
        for codec in self.array_to_array:
            order = codec.axis_order(ndim)
            if not codec.decodes_parts or (order is None and not codec.elementwise):
                raise UnsupportedError(
                    f"{self._key or 'metadata'}: array->array codec {codec.name!r} before "
                    f"{self.array_to_bytes.name!r} does not decode parts of a chunk (only "
                    "codecs that reorder axes or encode each element alone can come there)"
                )
            if order is not None:
                axes = tuple(axes[i] for i in order)
        return None if axes == tuple(range(ndim)) else axes

    def encoded_size(self) -> int | None:
        """The exact size of every encoded chunk when it is fixed, else None."""
        return self._encoded_size

    def max_encoded_size(self) -> int | None:
        """The most bytes a chunk can be stored as (exact sizes where fixed, a
        compressor's worst case where not); None when the data decides (variable-length
        data types). A larger stored value cannot be a chunk of this chain."""
        return self._max_encoded_size

    def to_metadata(self) -> list[dict[str, Any]]:
        """The `codecs` list of v3 metadata."""
        return [c.to_metadata().to_json() for c in self.codecs]

    def decode(self, data: Any, key: str = "") -> np.ndarray:
        """Decode one stored chunk to an array of `spec.shape` and `spec.dtype`.

        The result may be read-only (a view of `data`). Errors are `CodecError`s naming `key`.
        """
        self.check_fits(key)
        try:
            bytes_spec = self._bytes_spec.named(key) if key else self._bytes_spec
            for codec, (size, exact) in zip(
                reversed(self.bytes_to_bytes), reversed(self._decoded_sizes), strict=True
            ):
                data = codec.decode_sized(data, bytes_spec, size, exact)
            array = self.array_to_bytes.decode(data, bytes_spec)
            for codec, spec in zip(
                reversed(self.array_to_array), reversed(self._array_specs), strict=True
            ):
                array = codec.decode(array, spec)
        except CodecError as error:
            _raise_with_key(error, key)
        except AiozarrError:
            raise
        except Exception as error:  # a codec library's own error: corrupt data
            raise CodecError(f"{_where(key)}: cannot decode: {error!r}") from error
        if array.shape != self._spec.shape:
            raise CodecError(
                f"{_where(key)}: decoded shape {array.shape}, expected {self._spec.shape}"
            )
        return array

    def decode_into(self, data: Any, out: np.ndarray, key: str = "") -> None:
        """Decode one stored chunk into `out` (shaped like the chunk; may be a strided view)."""
        if out.shape != self._spec.shape:
            raise CodecError(
                f"{_where(key)}: cannot decode a chunk of shape {self._spec.shape} "
                f"into an array of shape {out.shape}"
            )
        decompress = self._direct_decompressor(out.dtype)
        if decompress is None:
            out[...] = self.decode(data, key)
        elif out.flags.c_contiguous and out.flags.writeable:
            # The last decompressor writes straight into `out`'s memory.
            self._decompress(decompress, data, out.reshape(-1).view(np.uint8), key)
        else:  # a strided block of the output: decompress into reused memory, then copy
            out[...] = self._decode_to_scratch(decompress, data, key)

    def decode_transient(self, data: Any, key: str = "") -> np.ndarray:
        """`decode`, possibly into memory this thread reuses for its next decode: use
        the result (copy what is needed) before decoding anything else on this thread."""
        decompress = self._direct_decompressor(self._spec.dtype)
        if decompress is None:
            return self.decode(data, key)
        self.check_fits(key)
        return self._decode_to_scratch(decompress, data, key)

    def check_fits(self, key: str = "") -> None:
        """Raise `CodecError` naming `key` when a chunk's values cannot fit in this
        process's memory (a `chunk_shape` of 2**40 x 2**40), before a decoder (or a partial
        write) allocates them."""
        spec = self._spec
        nbytes = spec.nbytes
        if nbytes > _SCRATCH_MAX_BYTES and nbytes > memory_bytes():
            raise CodecError(
                f"{_where(key)}: a chunk of shape {spec.shape} ({spec.dtype}) holds {nbytes} "
                f"bytes of values, more than the {memory_bytes()} bytes of memory this process "
                "may use; it cannot be read or written"
            )

    def _decode_to_scratch(self, decompress: Any, data: Any, key: str) -> np.ndarray:
        spec = self._spec
        buffer = _scratch(spec.nbytes)
        self._decompress(decompress, data, buffer, key)
        return buffer.view(spec.dtype).reshape(spec.shape)

    def _decompress(self, decompress: Any, data: Any, target: np.ndarray, key: str) -> None:
        """Run the bytes->bytes decoders, the first one writing into `target` (uint8)."""
        try:
            bytes_spec = self._bytes_spec.named(key) if key else self._bytes_spec
            pairs = list(zip(self.bytes_to_bytes, self._decoded_sizes, strict=True))[1:]
            for codec, (size, exact) in reversed(pairs):
                data = codec.decode_sized(data, bytes_spec, size, exact)
            decompress(data, target)
        except CodecError as error:
            _raise_with_key(error, key)
        except AiozarrError:
            raise
        except Exception as error:
            raise CodecError(f"{_where(key)}: cannot decode: {error!r}") from error

    def stored_values_dtype(self) -> np.dtype[Any] | None:
        """The dtype in which a stored chunk is just its values, in C order (no
        compression, filter or transposition), so each element lies at its own offset;
        None for any other chain."""
        memory = self.array_to_bytes.memory_dtype(self._spec.dtype)
        if memory is None or self.array_to_array or self.bytes_to_bytes:
            return None
        return memory

    def _direct_decompressor(self, dtype: np.dtype[Any]) -> Any:
        """The first decompressor's `decode_into_buffer` when its output is the chunk's
        values as they lie in memory (an array->bytes codec that declares its output a
        plain view of them in this dtype, `memory_dtype`; nothing before it)."""
        memory = self.array_to_bytes.memory_dtype(dtype)
        # `memory is None` first: numpy reads `None` as float64 in a dtype comparison.
        if (
            memory is None
            or memory != dtype
            or self.array_to_array
            or not self.bytes_to_bytes
            or dtype != self._spec.dtype
            or dtype.hasobject
        ):
            return None
        first = self.bytes_to_bytes[0]
        return first.decode_into_buffer if first.decodes_into_buffer else None

    def encode(self, array: np.ndarray, key: str = "") -> bytes | memoryview:
        """Encode one chunk (shaped like `spec`) to the bytes to store.

        Errors are `CodecError`s naming `key`: a codec library's own error too (numcodecs'
        bitround raises `KeyError` for a data type it does not take).
        """
        data = self._encode(array, key, unless_fill=False)
        assert data is not None
        return data

    def encode_unless_fill(self, array: np.ndarray, key: str = "") -> bytes | memoryview | None:
        """`encode`, or None where the array->bytes codec `elides_fill` and the
        array->array codecs turn `array` into nothing but the fill value as they encode
        it: zarr-python stores no such shard (a cast to uint8 of 0.2 with a fill value
        of 0.3: every inner chunk is the encoded fill, 0), which then reads as the
        array's fill value, not as an index-only shard's decoded fill (0.0)."""
        # with no array->array codec, the caller's own fill check has said it all
        unless_fill = self.array_to_bytes.elides_fill and bool(self.array_to_array)
        return self._encode(array, key, unless_fill=unless_fill)

    def _encode(
        self, array: np.ndarray, key: str, *, unless_fill: bool
    ) -> bytes | memoryview | None:
        spec = self._spec
        array = np.asarray(array)
        if array.shape != spec.shape:
            raise CodecError(
                f"{_where(key)}: cannot encode an array of shape {array.shape} as a chunk "
                f"of {spec.shape}"
            )
        try:
            if array.dtype != spec.dtype:
                array = array.astype(spec.dtype)
            for codec, codec_spec in zip(self.array_to_array, self._array_specs, strict=True):
                array = codec.encode(array, codec_spec)
            if unless_fill and _all_fill(array, self._bytes_spec.fill_value):
                return None
            data = self.array_to_bytes.encode(array, self._bytes_spec)
            for bb in self.bytes_to_bytes:
                data = bb.encode(data, self._bytes_spec)
        except CodecError as error:
            _raise_with_key(error, key)
        except AiozarrError:
            raise
        except Exception as error:  # a codec library's own error
            raise CodecError(f"{_where(key)}: cannot encode: {error!r}") from error
        return data

    def __repr__(self) -> str:
        return f"CodecChain({[c.name for c in self.codecs]}, spec={self._spec})"


# Chunks up to this size are decoded into one buffer per thread, reused from chunk to
# chunk: a fresh allocation per chunk costs page faults, ~10 % of decoding a 256 KiB
# zstd chunk (benchmarks: full read of the sharded dataset, whose inner chunks are
# strided blocks of the output).
_SCRATCH_MAX_BYTES = 16 << 20
_scratch_local = threading.local()


def _scratch(nbytes: int) -> np.ndarray:
    """`nbytes` of this thread's reusable decode buffer (uint8)."""
    if nbytes > _SCRATCH_MAX_BYTES:
        return np.empty(nbytes, dtype=np.uint8)
    buffer: np.ndarray | None = getattr(_scratch_local, "buffer", None)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = _scratch_local.buffer = np.empty(nbytes, dtype=np.uint8)
    return buffer[:nbytes]


@contextlib.contextmanager
def _naming(where: str) -> Iterator[None]:
    """A `MetadataError` raised in the block names `where` (the document), where it
    does not already."""
    try:
        yield
    except MetadataError as error:
        if where in str(error):
            raise
        raise MetadataError(f"{where}: {error}") from error


def _all_fill(array: np.ndarray, fill_value: Any) -> bool:
    """Whether `array` is all `fill_value` where that is a value of `array`'s type, as
    zarr-python's sharding codec tells an empty inner chunk: a fill value the
    array->array codecs pass on unencoded (numcodecs' `astype` to float32 keeps a
    float64 fill of 0.1, which no float32 equals) is never found there."""
    if fill_value is None or array.dtype.hasobject:
        return False
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            held = np.asarray(fill_value, dtype=array.dtype)
            same = bool(held == fill_value)
            if not same and held.dtype.kind in "fc":  # a NaN fill held as a NaN
                same = bool(np.isnan(held)) and bool(np.isnan(fill_value))
    except (TypeError, ValueError, OverflowError):
        return False
    return same and is_fill(array, fill_value)

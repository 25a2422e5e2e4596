"""`numcodecs.<id>`: any numcodecs codec in a v3 array, as zarr-python 3 writes them.

One adapter over numcodecs' registry, not a class per codec: the metadata name is
"numcodecs." + the numcodecs id and the configuration is numcodecs' config without
"id", kept as written so it round-trips exactly. The id decides the kind, as in
zarr-python's `zarr.codecs.numcodecs`: the filters that change values (delta, bitround,
quantize, fixedscaleoffset, astype, packbits) are array->array, pcodec and zfpy
array->bytes, every other codec (compressors, shuffle, checksums) bytes->bytes.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numcodecs.compat import ensure_bytes, ensure_ndarray_like

from aiozarr.codecs.base import (
    UNSIZED_MAX_DECODED_BYTES,
    ArrayToArrayCodec,
    ArrayToBytesCodec,
    BytesToBytesCodec,
    ChunkSpec,
    Codec,
    expanded,
)
from aiozarr.codecs.gzip import warn_zlib_in_gzip
from aiozarr.codecs.numcodecs_v2 import build_numcodec, decode_pcodec, decompress
from aiozarr.errors import ChecksumError, CodecError, MetadataError
from aiozarr.metadata.model import CodecMetadata

PREFIX = "numcodecs."

#: Filters that change values, dtype or shape: array->array (zarr-python's kinds).
ARRAY_TO_ARRAY = frozenset(
    {"delta", "bitround", "quantize", "fixedscaleoffset", "astype", "packbits"}
)
#: Codecs that take the array itself and return bytes.
ARRAY_TO_BYTES = frozenset({"pcodec", "zfpy"})
#: Checksums that add exactly 4 bytes (jenkins_lookup3 too: its `prefix` is hashed, not stored).
CHECKSUMS = frozenset({"crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3"})

#: The field holding a filter's input dtype, per filter that has one.
_INPUT_DTYPE = {
    "delta": "dtype",
    "fixedscaleoffset": "dtype",
    "quantize": "dtype",
    "astype": "decode_dtype",
}
#: The field holding the dtype a filter encodes to, when it changes the dtype.
_OUTPUT_DTYPE = {
    "delta": "astype",
    "fixedscaleoffset": "astype",
    "quantize": "astype",
    "astype": "encode_dtype",
}


#: The field zarr-python fills from the dtype a codec is handed when it is left out, on
#: creation and on open: shuffle's item size, the input dtype of three filters.
_FILLED = {
    "shuffle": "elementsize",
    "fixedscaleoffset": "dtype",
    "quantize": "dtype",
    "astype": "decode_dtype",
}


def _fill(field: str, dtype: np.dtype[Any]) -> Any:
    return dtype.itemsize if field == "elementsize" else str(dtype)


class NumcodecsCodec(Codec):
    """What the three kinds share: the numcodecs codec built from the configuration."""

    codec_id: ClassVar[str]

    def __init__(self, **configuration: Any) -> None:
        if "id" in configuration:
            raise MetadataError(f"unknown field 'id' (the id is in the name, {self.name!r})")
        self._configuration = dict(configuration)
        config = {"id": self.codec_id, **configuration}
        self._unfilled = _FILLED.get(self.codec_id, "")
        if self._unfilled and configuration.get(self._unfilled) is None:
            # Built per dtype once chunks are seen (`numcodec`); checked now with a stand-in.
            build_numcodec({**config, self._unfilled: _fill(self._unfilled, np.dtype("f8"))})
            self.codec = None
            self._by_dtype: dict[np.dtype[Any], Any] = {}
        else:
            self.codec = build_numcodec(config)

    def numcodec(self, spec: ChunkSpec) -> Any:
        """The numcodecs codec for chunks of `spec`: the field left out filled from its dtype."""
        if self.codec is not None:
            return self.codec
        codec = self._by_dtype.get(spec.dtype)
        if codec is None:
            field = self._unfilled
            config = {"id": self.codec_id, **self._configuration, field: _fill(field, spec.dtype)}
            codec = self._by_dtype[spec.dtype] = build_numcodec(config)
        return codec

    @classmethod
    def from_config(cls, configuration: Mapping[str, Any]) -> Codec:
        return cls(**configuration)

    def configuration(self) -> dict[str, Any]:
        return dict(self._configuration)

    def __reduce__(self) -> Any:
        return _rebuild, (self.name, self._configuration)

    def _as_chunk(self, decoded: Any, spec: ChunkSpec) -> np.ndarray:
        """What numcodecs decoded, as the chunk `spec` describes (its size checked)."""
        out = np.asarray(ensure_ndarray_like(decoded))
        if out.size != math.prod(spec.shape):
            raise CodecError(
                f"codec {self.name!r}: decoded {out.size} items, expected {math.prod(spec.shape)}"
            )
        if out.dtype != spec.dtype:
            out = out.astype(spec.dtype)
        return out.reshape(spec.shape)


def _rebuild(name: str, configuration: dict[str, Any]) -> Codec:
    return numcodecs_class(name).from_config(configuration)


class NumcodecsArrayToArray(NumcodecsCodec, ArrayToArrayCodec):
    """A numcodecs filter: the chunk in, the encoded array out (flattened by numcodecs,
    shaped back like the chunk here, as zarr-python does)."""

    def _dtype_field(self, table: Mapping[str, str]) -> np.dtype[Any] | None:
        value = self._configuration.get(table.get(self.codec_id, ""))
        return None if value is None else np.dtype(value)

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        # The fill value stays as it is, as in zarr-python: only the outer chunk fills.
        if self.codec_id == "packbits":  # 1 byte for the padding length, then the bits
            shape = (1 + math.ceil(math.prod(spec.shape) / 8),)
            return ChunkSpec(shape, np.dtype("u1"), spec.fill_value)
        dtype = self._dtype_field(_OUTPUT_DTYPE)
        if dtype is None or dtype == spec.dtype:
            return spec
        return ChunkSpec(spec.shape, dtype, spec.fill_value)

    def validate(self, spec: ChunkSpec) -> None:
        if self.codec_id == "packbits" and spec.dtype != np.dtype(bool):
            raise MetadataError(f"codec {self.name!r} encodes bool chunks, got {spec.dtype}")
        dtype = self._dtype_field(_INPUT_DTYPE)
        if dtype is not None and dtype != spec.dtype:
            field = _INPUT_DTYPE[self.codec_id]
            raise MetadataError(
                f"codec {self.name!r}: field {field!r} is {dtype}, but the chunks it is "
                f"handed are {spec.dtype}"
            )

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        resolved = self.resolve(spec)
        out = np.ascontiguousarray(
            ensure_ndarray_like(self.numcodec(spec).encode(np.ascontiguousarray(array)))
        )
        if out.dtype != resolved.dtype:  # its bytes are what is stored (bitround: an int view)
            out = out.reshape(-1).view(np.uint8).view(resolved.dtype)
        if out.size != math.prod(resolved.shape):
            raise CodecError(
                f"codec {self.name!r}: encoded {out.size} items of {resolved.dtype}, "
                f"expected {math.prod(resolved.shape)}"
            )
        return out.reshape(resolved.shape)

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return self._as_chunk(self.numcodec(spec).decode(np.ascontiguousarray(array)), spec)


class NumcodecsArrayToBytes(NumcodecsCodec, ArrayToBytesCodec):
    """A numcodecs codec that compresses the array itself (pcodec, zfpy)."""

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes:
        return ensure_bytes(
            self.numcodec(spec).encode(np.ascontiguousarray(array, dtype=spec.dtype))
        )

    def decode(self, data: Any, spec: ChunkSpec) -> np.ndarray:
        codec = self.numcodec(spec)
        if self.codec_id != "pcodec":
            return self._as_chunk(codec.decode(bytes(memoryview(data))), spec)
        # Decoded into an array of the chunk's size, which pcodec cannot write past.
        out = decode_pcodec(memoryview(data).cast("B"), spec.nbytes, True, spec.dtype)
        return self._as_chunk(out, spec)

    def max_encoded_size(self, spec: ChunkSpec) -> int | None:
        return expanded(spec.nbytes)


class NumcodecsBytesToBytes(NumcodecsCodec, BytesToBytesCodec):
    """A numcodecs compressor, shuffle or checksum over the encoded bytes. Decompression
    with a known decoded size is bounded, as for v2 arrays (`decompress`)."""

    def __init__(self, **configuration: Any) -> None:
        super().__init__(**configuration)
        self._warned = False

    def _zlib_in_gzip(self, key: str) -> None:
        if not self._warned:
            self._warned = True
            warn_zlib_in_gzip(key)

    def encode(self, data: Any, spec: ChunkSpec) -> bytes:
        return ensure_bytes(self.numcodec(spec).encode(memoryview(data).cast("B")))

    def decode(self, data: Any, spec: ChunkSpec) -> memoryview:
        return self.decode_sized(data, spec, UNSIZED_MAX_DECODED_BYTES, exact=False)

    def decode_sized(self, data: Any, spec: ChunkSpec, size: int, exact: bool = True) -> memoryview:
        view = memoryview(data).cast("B")
        try:
            out = decompress(self.numcodec(spec), view, size, exact, self._zlib_in_gzip, spec.key)
        except RuntimeError as error:  # numcodecs' checksum codecs: a mismatch
            if self.codec_id in CHECKSUMS:
                raise ChecksumError(f"codec {self.name!r}: {error}") from error
            raise
        return memoryview(np.ascontiguousarray(ensure_ndarray_like(out))).cast("B")

    def encoded_size(self, size: int) -> int | None:
        if self.codec_id in CHECKSUMS:
            return size + 4
        if self.codec_id == "shuffle":
            return size
        return None


@functools.cache
def numcodecs_class(name: str) -> type[NumcodecsCodec]:
    """The adapter class for the codec named `name` ("numcodecs.<id>"): one per name,
    of the kind the id has."""
    codec_id = name.removeprefix(PREFIX)
    if codec_id in ARRAY_TO_ARRAY:
        base: type[NumcodecsCodec] = NumcodecsArrayToArray
    elif codec_id in ARRAY_TO_BYTES:
        base = NumcodecsArrayToBytes
    else:
        base = NumcodecsBytesToBytes
    title = "".join(part.title() for part in codec_id.split("_"))
    attributes = {"name": name, "codec_id": codec_id, "__module__": __name__}
    return type(f"Numcodecs{title}", (base,), attributes)


def complete(codecs: Sequence[CodecMetadata], dtype: np.dtype[Any]) -> tuple[CodecMetadata, ...]:
    """`codecs` for a new array, with the fields zarr-python fills in when the caller
    leaves them out filled in the same way: shuffle's `elementsize`, the input dtype of
    fixedscaleoffset and quantize (`dtype`) and of astype (`decode_dtype`). The dtype is
    the one each codec is handed (the array's, unless a filter before it changed it)."""
    out = []
    spec = ChunkSpec((1,), dtype, None)
    for meta in codecs:
        if not meta.name.startswith(PREFIX):
            out.append(meta)
            continue
        codec_id = meta.name.removeprefix(PREFIX)
        configuration = dict(meta.configuration or {})
        field = _FILLED.get(codec_id)
        if field is not None and configuration.get(field) is None:
            configuration[field] = _fill(field, spec.dtype)
        meta = CodecMetadata(meta.name, configuration)
        out.append(meta)
        if codec_id in ARRAY_TO_ARRAY:
            # A bad configuration is reported, with its key, when the array's chain is built.
            with contextlib.suppress(Exception):
                codec = numcodecs_class(meta.name).from_config(configuration)
                spec = codec.resolve(spec)  # type: ignore[union-attr]
    return tuple(out)
